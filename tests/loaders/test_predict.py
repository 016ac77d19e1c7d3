"""LocalModel.predict / predict_batches: every input kind, safe casts, and every error."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from loaders.support import (
    EstimatorExports,
    KerasExport,
    ModuleExport,
    estimator_predictions,
    make_rows,
    records_of,
)
from tfship.errors import ModelInputError
from tfship.loaders import LocalModel, load

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def parsing(estimator_exports: EstimatorExports) -> Any:
    with load(estimator_exports.parsing, signature="predict") as model:
        yield model


@pytest.fixture(scope="module")
def raw(estimator_exports: EstimatorExports) -> Any:
    with load(estimator_exports.raw) as model:
        yield model


@pytest.fixture(scope="module")
def keras(keras_export: KerasExport) -> Any:
    with load(keras_export.path) as model:
        yield model


@pytest.fixture(scope="module")
def rows() -> dict[str, Any]:
    return make_rows(24, seed=11)


@pytest.fixture(scope="module")
def want(estimator_exports: EstimatorExports, rows: dict[str, Any]) -> np.ndarray:
    return estimator_predictions(estimator_exports, rows)["probabilities"]


def _examples(rows: dict[str, Any]) -> list[Any]:
    import tensorflow as tf

    train = tf.train
    out = []
    for r in records_of(rows):
        feats = {
            "x": train.Feature(float_list=train.FloatList(value=[r["x"]])),
            "v2": train.Feature(float_list=train.FloatList(value=r["v2"])),
            "color": train.Feature(bytes_list=train.BytesList(value=[r["color"].encode()])),
            "tags": train.Feature(bytes_list=train.BytesList(value=[t.encode() for t in r["tags"]])),
        }
        out.append(train.Example(features=train.Features(feature=feats)))
    return out


def _probabilities(model: LocalModel, inputs: Any, **kw: Any) -> np.ndarray:
    return model.predict(inputs, outputs=["probabilities"], **kw)["probabilities"]


@pytest.mark.parametrize(
    "kind", ["records", "columns", "lists", "dataframe", "examples", "serialized", "keyed"]
)
def test_every_input_kind_equals_estimator_predict(
    parsing: LocalModel, rows: dict[str, Any], want: np.ndarray, kind: str
) -> None:
    records = records_of(rows)
    inputs: Any = {
        "records": records,
        "columns": rows,
        "lists": {k: [r[k] for r in records] for k in records[0]},
        "dataframe": pd.DataFrame(records),
        "examples": _examples(rows),
        "serialized": [e.SerializeToString() for e in _examples(rows)],
        "keyed": {"examples": [e.SerializeToString() for e in _examples(rows)]},
    }[kind]
    np.testing.assert_allclose(_probabilities(parsing, inputs), want, rtol=1e-5)


def test_one_record_and_one_example_give_one_row(
    parsing: LocalModel, rows: dict[str, Any], want: np.ndarray
) -> None:
    record = records_of(rows)[3]
    np.testing.assert_allclose(_probabilities(parsing, record), want[3:4], rtol=1e-5)
    np.testing.assert_allclose(_probabilities(parsing, _examples(rows)[3]), want[3:4], rtol=1e-5)


def test_parsed_feed_equals_serialized_path(parsing: LocalModel, rows: dict[str, Any]) -> None:
    adapter = parsing.adapter()
    columns = adapter.typed_columns(rows)
    direct = adapter.run_columns(columns, None)
    serialized = adapter.run_examples(adapter.serialize(columns), None)
    for key in direct:
        np.testing.assert_array_equal(direct[key], serialized[key])


def test_raw_signature_takes_lists_triples_and_examples(
    raw: LocalModel, rows: dict[str, Any], want: np.ndarray
) -> None:
    np.testing.assert_allclose(_probabilities(raw, rows), want, rtol=1e-5)
    np.testing.assert_allclose(_probabilities(raw, records_of(rows)), want, rtol=1e-5)
    np.testing.assert_allclose(_probabilities(raw, _examples(rows)), want, rtol=1e-5)
    tags = rows["tags"]
    triple = (
        np.array([[i, j] for i, r in enumerate(tags) for j in range(len(r))]),
        [v for r in tags for v in r],
        [len(tags), max(map(len, tags))],
    )
    np.testing.assert_allclose(_probabilities(raw, {**rows, "tags": triple}), want, rtol=1e-5)


def test_defaults_fill_missing_values(parsing: LocalModel, rows: dict[str, Any]) -> None:
    records = records_of(rows)[:4]
    without_x = [{k: v for k, v in r.items() if k != "x"} for r in records]
    zero_x = [{**r, "x": 0.0} for r in records]
    np.testing.assert_allclose(_probabilities(parsing, without_x), _probabilities(parsing, zero_x), rtol=1e-6)
    no_tags = [{k: v for k, v in r.items() if k != "tags"} for r in records]
    empty_tags = [{**r, "tags": []} for r in records]
    np.testing.assert_allclose(
        _probabilities(parsing, no_tags), _probabilities(parsing, empty_tags), rtol=1e-6
    )


def test_safe_casts_are_silent(keras: LocalModel, keras_export: KerasExport) -> None:
    a = np.array([[1, 2, 3], [4, 5, 6]])  # int64 -> float32: exact
    b = [0.0, 2.0]  # whole floats -> int64: exact
    want = keras_export.reference(a, [0, 2])
    np.testing.assert_allclose(keras.predict({"a": a, "b": b})["score"], want, rtol=1e-5)
    one = keras.predict({"a": [1.0, 2.0, 3.0], "b": 0})  # one record
    np.testing.assert_allclose(one["score"], want[:1], rtol=1e-5)


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        # Python values (a list per column) follow the schema's rule for a value ...
        (
            {"a": [[0.1, 0.2, 0.3]], "b": [1.5]},
            r"input 'b': record 0: expected int64, found 1\.5 \(1\.5 is not a whole",
        ),
        (
            [{"a": [0.1, 0.2, 0.3], "b": np.str_("x")}],  # a record's numpy scalar, as numpy 1 wrote it
            r"input 'b': record 0: expected int64, found 'x' \(",
        ),
        (
            {"a": [["1", "x", "3"]], "b": [1]},
            r"input 'a': record 0: expected float32, found \['1', 'x', '3'\]",
        ),
        # ... typed arrays the cast rule
        (
            {"a": [[0.1, 0.2, 0.3]], "b": np.array([1.5])},
            r"input 'b': dtype float64 .* int64 .*\(1\.5 is not a whole",
        ),
        (
            {"a": np.array([[2**25, 0, 0]]), "b": [1]},
            r"input 'a': dtype int64 .*\(33554432 is not exact in float32",
        ),
        (
            {"a": np.array([["1", "2", "3"]]), "b": [1]},
            r"input 'a': dtype string .* float32 .*strings and numbers",
        ),
        ({"a": [[0.0, 0.0]], "b": [1]}, r"input 'a': expected float32 \[3\] per row.*\[1, 2\]"),
        ({"a": [[0.0, 0.0, 0.0]], "b": [1, 2]}, r"different numbers of rows \('a': 1, 'b': 2\)"),
        ({"a": [[0.0, 0.0, 0.0]]}, r"missing required input 'b' \(int64 \[\] per row\)"),
        (
            {"a": [[0.0, 0.0, 0.0]], "b": [1], "bb": [1]},
            r"unknown input 'bb'; valid names: a, b",
        ),
        ({"a": [[0.0, 0.0, 0.0], [1.0]], "b": [1, 2]}, r"input 'a'.*rows of different lengths"),
    ],
)
def test_input_errors_name_the_input_and_the_expectation(keras: LocalModel, inputs: Any, match: str) -> None:
    with pytest.raises(ModelInputError, match=match):
        keras.predict(inputs)


def test_parsing_errors_name_the_feature(parsing: LocalModel, rows: dict[str, Any]) -> None:
    records = records_of(rows)[:3]
    with pytest.raises(ModelInputError, match=r"record 1: missing required input 'v2'"):
        parsing.predict([records[0], {k: v for k, v in records[1].items() if k != "v2"}])
    with pytest.raises(ModelInputError, match=r"unknown input 'colour'; valid names: .*color"):
        parsing.predict([{**records[0], "colour": "red"}])
    with pytest.raises(ModelInputError, match=r"input 'color': record 0: expected string, found 1.5"):
        parsing.predict([{**records[0], "color": 1.5}])


def test_examples_into_a_feature_signature_name_the_features(keras: LocalModel, rows: dict[str, Any]) -> None:
    example = _examples(rows)[0]
    with pytest.raises(ModelInputError, match=r"unknown input 'color', 'tags', 'v2', 'x'"):
        keras.predict([example])


def test_wrong_kinds_of_input_are_type_errors(keras: LocalModel) -> None:
    with pytest.raises(TypeError, match="dict of columns, a list of record dicts"):
        keras.predict(3.0)
    with pytest.raises(ValueError, match="at least one row"):
        keras.predict([])


def test_predict_batches_streams_in_order(
    parsing: LocalModel, rows: dict[str, Any], want: np.ndarray
) -> None:
    records = records_of(rows)
    sizes = []
    chunks = []
    for out in parsing.predict_batches(iter(records), 5, outputs=["probabilities"]):
        sizes.append(len(out["probabilities"]))
        chunks.append(out["probabilities"])
    assert sizes == [5, 5, 5, 5, 4]
    np.testing.assert_allclose(np.concatenate(chunks), want, rtol=1e-5)
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        next(parsing.predict_batches(records, 0))


def test_a_tf2_sparse_argument_is_one_input_again(module_export: ModuleExport) -> None:
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    s = [[1, 2], [], [5]]
    want = ModuleExport.reference(x, s)
    with load(module_export.path) as model:
        assert sorted(model.signature().inputs) == ["s", "s_1", "s_2", "x"]  # as TF2 saves it
        np.testing.assert_allclose(model.predict({"x": x, "s": s})["y"], want)
        records = [{"x": list(row), "s": tags} for row, tags in zip(x.tolist(), s)]
        np.testing.assert_allclose(model.predict(records)["y"], want)
        triple = ([[0, 0], [0, 1], [2, 0]], [1, 2, 5], [3, 2])
        np.testing.assert_allclose(model.predict({"x": x, "s": triple})["y"], want)
        with pytest.raises(ModelInputError, match=r"unknown input 's_1'; valid names: s, x"):
            model.predict({"x": x, "s": s, "s_1": [1]})


def test_dataframe_missing_cells_take_defaults_or_name_the_row(
    parsing: LocalModel, rows: dict[str, Any]
) -> None:
    records = records_of(rows)[:3]
    frame = pd.DataFrame(records)
    frame.loc[1, "x"] = np.nan  # x has a default (0.0)
    zero = [dict(r) for r in records]
    zero[1]["x"] = 0.0
    np.testing.assert_allclose(_probabilities(parsing, frame), _probabilities(parsing, zero), rtol=1e-6)
    frame.loc[2, "color"] = None  # a categorical: variable length, so missing = no value
    assert _probabilities(parsing, frame).shape == (3, 2)
    frame["v2"] = [[0.1, 0.2], None, [0.3, 0.4]]  # v2 has no default
    with pytest.raises(ModelInputError, match=r"record 1: missing required input 'v2'"):
        parsing.predict(frame)
