"""Schema: round trips, TensorFlow views, record conversion and every error path."""

from __future__ import annotations

import json
import pickle
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfship.errors import DataError, SchemaError
from tfship.records import BySchema, to_example
from tfship.schema import CsvLineError, CsvMissing, Feature, Label, MissingColumnError, Schema

BASE: dict[str, Any] = {
    "label": {"name": "y", "kind": "multiclass", "vocabulary": ["a", "b", "c"]},
    "features": [
        {
            "name": "x",
            "dtype": "float32",
            "default": 1.5,
            "use": {"kind": "numeric", "normalize": {"mean": 1.0, "std": 2.0}},
        },
        {"name": "n", "dtype": "int64", "use": {"kind": "bucketized", "boundaries": [0, 10, 20]}},
        {
            "name": "cat",
            "dtype": "string",
            "default": "",
            "use": {"kind": "categorical", "vocabulary": ["p", "q"], "as": "embedding", "dimension": 3},
        },
        {"name": "ident", "dtype": "int64", "default": 0, "use": {"kind": "identity", "num_buckets": 5}},
        {
            "name": "tags",
            "dtype": "string",
            "shape": None,
            "use": {"kind": "hash", "buckets": 16, "as": "embedding", "dimension": 2},
        },
        {"name": "vec", "dtype": "float32", "shape": [3], "default": [0.0, 0.0, 0.0]},
    ],
    "crosses": [{"features": ["cat", "n"], "hash_buckets": 8}],
    "groups": {"user": ["x", "cat"], "item": ["n", "tags"]},
}


def _with(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(BASE))
    data.update(changes)
    return data


def _feature(index: int, **changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(BASE))
    data["features"][index].update(changes)
    return data


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    schema = Schema.from_dict(BASE)
    ranged = Schema.from_dict(_with(label={"name": "y", "kind": "regression", "range": [2700, 6300]}))
    assert Schema.from_dict(ranged.to_dict()).label.range == (2700, 6300)
    schema.save(tmp_path / "s.json")
    again = Schema.load(tmp_path / "s.json")
    assert again.to_dict() == schema.to_dict()
    assert again.feature("tags").is_sparse
    assert again.feature("n").required and not again.feature("x").required


def test_parse_spec_tensor_specs_and_columns() -> None:
    import tensorflow as tf

    schema = Schema.from_dict(BASE)
    spec = schema.parse_spec(include_label=True)
    assert isinstance(spec["tags"], tf.io.VarLenFeature)
    assert spec["vec"].shape == (3,) and spec["x"].default_value == 1.5
    assert spec["y"].dtype == tf.string
    specs = schema.tensor_specs()
    assert specs["vec"].shape.as_list() == [None, 3]
    assert isinstance(specs["tags"], tf.SparseTensorSpec)


@pytest.mark.estimator  # feature columns are the trainer's
def test_feature_columns_compute_on_parsed_examples() -> None:
    import tensorflow as tf

    from tfship.trainer import build_columns

    schema = Schema.from_dict(BASE)
    records = [
        {"x": "2", "n": "15", "cat": "q", "ident": 3, "tags": ["a", "b"], "vec": [1, 2, 3]},
        {"x": None, "n": 3, "cat": "zzz", "tags": [], "vec": [4, 5, 6]},
    ]
    serialized = [to_example(r, BySchema(schema)).SerializeToString() for r in records]
    parsed = tf.io.parse_example(serialized, schema.parse_spec())
    dense = tf.keras.layers.DenseFeatures(build_columns(schema))(parsed)
    assert dense.shape[0] == 2 and dense.shape[1] > 10
    assert len(build_columns(schema)) == len(BASE["features"]) + 1  # one cross
    assert parsed["x"].numpy().tolist() == [2.0, 1.5]  # default filled in


def test_convert_record_fills_defaults_and_checks_types() -> None:
    schema = Schema.from_dict(BASE)
    row = {"x": "NA", "n": "7.0", "tags": "u|v", "vec": "1|2|3"}
    values = schema.convert_record(row, csv=CsvMissing())
    assert values == {
        "x": [1.5],
        "n": [7],
        "cat": [""],
        "ident": [0],
        "tags": ["u", "v"],
        "vec": [1.0, 2.0, 3.0],
    }


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"x": 1.0}, r"rows\.csv:4: field 'n': missing, and the feature has no default"),
        ({"n": "seven"}, r"rows\.csv:4: field 'n': expected int64, found 'seven'"),
        ({"n": 7.5}, r"field 'n': expected int64, found 7\.5"),
        ({"n": np.float64(7.5)}, r"field 'n': expected int64, found 7\.5 \(7\.5 is not a whole number\)$"),
        ({"n": 1, "vec": "1|2"}, r"field 'vec': expected 3 values \(shape \[3\]\), found 2"),
        ({"n": 1, "x": True}, r"field 'x': expected float32"),
        ({"n": 1, "x": "1e39"}, r"field 'x': expected float32, found '1e39' \('1e39' is out of the range"),
        ({"n": 2**63}, r"field 'n': expected int64, found 9223372036854775808 .*out of the range of int64"),
    ],
)
def test_convert_record_errors_name_record_and_field(record: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message):
        Schema.from_dict(BASE).convert_record(record, where="rows.csv:4", csv=CsvMissing())


def test_label_conversion() -> None:
    schema = Schema.from_dict(BASE)
    assert schema.convert_label({"y": "b"}) == "b"
    with pytest.raises(DataError, match=r"label 'y': 'z' is not one of \['a', 'b', 'c'\]"):
        schema.convert_label({"y": "z"}, where="f:2")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_feature(0, dtype="float64"), r"feature 'x': dtype 'float64' is not one of"),
        (_feature(0, shape=[0]), r"feature 'x': shape must be a list of positive ints"),
        (_feature(0, default="abc"), r"feature 'x': default 'abc' is not a valid float32"),
        (_feature(0, use={"kind": "magic"}), r"feature 'x': use.kind 'magic' is not one of"),
        (
            _feature(0, use={"kind": "numeric", "normalize": {"mean": 0, "std": 0}}),
            r"feature 'x': normalize needs numbers 'mean' and 'std' > 0",
        ),
        (
            _feature(1, use={"kind": "bucketized", "boundaries": [3, 1]}),
            r"feature 'n': boundaries must be a non-empty increasing list",
        ),
        (
            _feature(2, use={"kind": "categorical"}),
            r"feature 'cat': a categorical feature needs one of vocabulary or vocabulary_file",
        ),
        (
            _feature(2, use={"kind": "categorical", "vocabulary": ["p", "p"]}),
            r"feature 'cat': vocabulary has duplicate entries",
        ),
        (
            _feature(2, use={"kind": "categorical", "vocabulary": ["p"], "as": "embedding"}),
            r"feature 'cat': embedding dimension must be a positive integer",
        ),
        (_feature(2, use={"kind": "numeric"}), r"feature 'cat': a numeric feature needs dtype float32"),
        (
            _feature(3, dtype="string", default="", use={"kind": "identity", "num_buckets": 5}),
            r"feature 'ident': an identity feature needs dtype int64",
        ),
        (_feature(4, use={"kind": "hash", "buckets": 0}), r"feature 'tags': buckets must be a positive"),
        (_feature(5, default=[0.0]), r"feature 'vec': default has 1 values, shape \[3\] needs 3"),
        (
            _feature(0, use={"kind": "numeric", "range": [5, 1]}),
            r"feature 'x': range must be \[min, max\], two numbers with min <= max, found \[5, 1\]",
        ),
        (
            _feature(2, use={"kind": "categorical", "vocabulary": ["p"], "range": [0, 1]}),
            r"feature 'cat': range is for numeric and bucketized features, not categorical",
        ),
        (_with(label={"name": "y", "kind": "regression", "range": [0]}), r"label 'y': range must be"),
        (
            _with(label={"name": "y", "kind": "binary", "range": [0, 1]}),
            r"label 'y': range: only a regression label has a range",
        ),
        (_feature(0, name="n"), r"features \['n'\] are declared more than once"),
        (_feature(0, colour="red"), r"feature 'x': unknown keys \['colour'\]"),
        (_with(label={"name": "y", "kind": "ordinal"}), r"label 'y': kind 'ordinal' is not one of"),
        (_with(label={"name": "y", "kind": "multiclass"}), r"label 'y': a multiclass label needs"),
        (_with(label={"name": "x", "kind": "regression"}), r"label 'x' is also declared as a feature"),
        (
            _with(crosses=[{"features": ["cat", "nope"], "hash_buckets": 4}]),
            r"crosses\[0\]: unknown features \['nope'\]",
        ),
        (_with(groups={"user": ["ghost"]}), r"group 'user' names unknown features \['ghost'\]"),
        (_with(features=[]), r"'features' must be a non-empty list"),
        (_with(version=2), r"schema version 2 is not supported"),
    ],
)
def test_bad_schemas_name_the_feature(data: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict(data)


def test_bad_schema_files(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match=r"does not exist"):
        Schema.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SchemaError, match=r"is not valid JSON"):
        Schema.load(bad)


@pytest.mark.estimator  # feature columns are the trainer's
def test_vocabulary_file_is_resolved_next_to_the_schema(tmp_path: Path) -> None:
    from tfship.trainer import build_columns

    (tmp_path / "vocab.txt").write_text("p\nq\n")
    data = _feature(2, use={"kind": "categorical", "vocabulary_file": "vocab.txt"})
    (tmp_path / "s.json").write_text(json.dumps(data))
    assert len(build_columns(Schema.load(tmp_path / "s.json"))) == 7
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(SchemaError, match=r"feature 'cat': vocabulary_file .*vocab.txt does not exist"):
        build_columns(Schema.load(tmp_path / "s.json"))


def test_a_number_too_big_for_any_float_is_a_bad_value_named_in_one_short_line() -> None:
    # float() of an int past ~308 digits raises OverflowError: still a bad value of that field
    with pytest.raises(DataError) as caught:
        Schema.from_dict(BASE).convert_record({"n": 1, "x": 10**400}, where="rows.jsonl:4", csv=CsvMissing())
    message = str(caught.value)
    assert message.startswith("rows.jsonl:4: field 'x': expected float32, found 1000")
    assert "(401 characters)" in message
    assert "whole number of 401 digits is out of the range of float32" in message
    assert len(message) < 300


def test_the_classes_are_named_in_tfship_schema_where_users_import_them() -> None:
    # reprs, tracebacks and pickles name them there; typing.get_type_hints (which dataclass
    # tools call) reads their annotations there
    for cls in (Schema, Label, Feature, CsvLineError, MissingColumnError):
        assert f"{cls.__module__}.{cls.__qualname__}" == f"tfship.schema.{cls.__name__}"
        typing.get_type_hints(cls)
    schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"}, "features": [{"name": "x"}]})
    pickled = pickle.dumps(schema)
    assert b"tfship.schema\x94" in pickled and pickle.loads(pickled) == schema
