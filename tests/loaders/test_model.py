"""load() and LocalModel.run(): the exact call, on Estimator exports and a Keras SavedModel."""

from __future__ import annotations

import shutil
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import tfship.loaders
from loaders.support import (
    EstimatorExports,
    KerasExport,
    estimator_predictions,
    make_rows,
)
from tfship.errors import ModelError, ModelInputError, SignatureNotFoundError
from tfship.loaders import LocalModel, load

pytestmark = pytest.mark.slow


def test_public_names_are_exactly_all() -> None:
    public = {  # its public submodule (tfship.loaders.beam, once imported) is not a name
        n
        for n in dir(tfship.loaders)
        if not n.startswith("_") and not isinstance(getattr(tfship.loaders, n), types.ModuleType)
    }
    assert sorted(tfship.loaders.__all__) == tfship.loaders.__all__
    assert public - {"annotations"} == set(tfship.loaders.__all__)


def _serialized(model: LocalModel, rows: dict[str, object]) -> np.ndarray:
    adapter = model.adapter("predict")
    return adapter.serialize(adapter.typed_columns(rows))  # type: ignore[arg-type]


def test_estimator_export_loads_every_signature(estimator_exports: EstimatorExports) -> None:
    with load(estimator_exports.parsing) as model:
        assert sorted(model.signatures) == [
            "classification",
            "predict",
            "regression",
            "serving_default",
        ]
        assert model.default_signature == "serving_default"
        assert model.meta_graph.tags == ("serve",)
        assert model.path == estimator_exports.parsing


def test_run_matches_estimator_predict(estimator_exports: EstimatorExports) -> None:
    rows = make_rows(20, seed=5)
    want = estimator_predictions(estimator_exports, rows)
    with load(estimator_exports.parsing) as model:
        got = model.run({"examples": _serialized(model, rows)}, signature="predict")
    assert sorted(got) == sorted(want)
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], rtol=1e-5)
    np.testing.assert_array_equal(got["class_ids"], want["class_ids"])
    assert got["classes"].dtype == object and isinstance(got["classes"][0, 0], bytes)


def test_run_returns_only_requested_outputs(estimator_exports: EstimatorExports) -> None:
    rows = make_rows(3, seed=1)
    with load(estimator_exports.parsing) as model:
        got = model.run({"inputs": _serialized(model, rows)}, outputs=["scores"], signature="classification")
    assert list(got) == ["scores"]
    assert got["scores"].shape == (3, 2)


def test_run_feeds_a_coo_sparse_input(estimator_exports: EstimatorExports) -> None:
    rows = make_rows(6, seed=2)
    want = estimator_predictions(estimator_exports, rows)
    tags = rows["tags"]
    indices = np.array([[i, j] for i, r in enumerate(tags) for j in range(len(r))], np.int64)
    values = np.array([v for r in tags for v in r], dtype=object)
    shape = np.array([len(tags), max(len(r) for r in tags)], np.int64)
    feeds = {
        "x": rows["x"],
        "v2": rows["v2"],
        "color": rows["color"],
        "tags": (indices.reshape(-1, 2), values, shape),
    }
    with load(estimator_exports.raw) as model:
        assert model.default_signature == "predict"  # a raw export has only this one
        got = model.run(feeds)
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], rtol=1e-5)


def test_keras_savedmodel_runs_like_the_keras_model(keras_export: KerasExport) -> None:
    a = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    b = np.array([0, 1, 2, 3], np.int64)
    want = keras_export.reference(a, b)
    with load(keras_export.path) as model:
        # the init op is hidden; Keras 3's export adds "serve", the same function
        assert "serving_default" in model.signatures
        assert set(model.signatures) <= {"serving_default", "serve"}
        got = model.run({"a": a, "b": b})
        assert list(got) == ["score"]
        np.testing.assert_allclose(got["score"], want, rtol=1e-5)
        # again with another batch size: nothing is specialised to the first call
        np.testing.assert_allclose(model.run({"a": a[:1], "b": b[:1]})["score"], want[:1], rtol=1e-5)


def test_run_from_threads_gives_the_same_answers(keras_export: KerasExport) -> None:
    rng = np.random.default_rng(0)
    batches = [
        {"a": rng.normal(size=(n, 3)).astype(np.float32), "b": rng.integers(0, 3, n)} for n in range(1, 17)
    ]
    with load(keras_export.path) as model:
        serial = [model.run(f)["score"] for f in batches]
        with ThreadPoolExecutor(4) as pool:
            threaded = list(pool.map(lambda f: model.run(f)["score"], batches))
    for one, other in zip(serial, threaded):
        np.testing.assert_array_equal(one, other)


def test_an_export_base_loads_its_newest_version(keras_export: KerasExport, tmp_path: Path) -> None:
    base = tmp_path / "keras"
    shutil.copytree(keras_export.path, base / "100")
    shutil.copytree(keras_export.path, base / "20")
    (base / "300").mkdir()  # no SavedModel inside: not a version
    with load(base) as model:
        assert model.path == base / "100"


@pytest.mark.parametrize(
    ("feeds", "match"),
    [
        (
            {"a": np.zeros((1, 3), np.float32)},
            r"^signature 'serving_default': missing input 'b'; "
            r"the signature expects a: float32 \[\?, 3\], b: int64 \[\?\]$",
        ),
        (
            {"a": np.zeros((1, 3), np.float32), "b": np.zeros(1, np.int64), "c": 1},
            r"^signature 'serving_default': unknown input 'c'; the signature expects a: ",
        ),
        (
            {"a": np.zeros((1, 3), np.float64), "b": np.zeros(1, np.int64)},
            r"^signature 'serving_default' input 'a': dtype float64 does not match the "
            r"signature's float32; convert it first \(array.astype\('float32'\)\) or pass cast=True$",
        ),
        (
            {"a": [["x", "y", "z"]], "b": np.zeros(1, np.int64)},
            r"input 'a': expected float32 numbers, got strings",
        ),
        (
            {"a": np.zeros((1, 3), np.float32), "b": [1.5]},
            r"input 'b': dtype float64 does not match the signature's int64 and cannot be cast "
            r"to it \(1.5 is not a whole number\)",
        ),
    ],
)
def test_run_checks_inputs_before_the_call(
    keras_export: KerasExport, feeds: dict[str, object], match: str
) -> None:
    with load(keras_export.path) as model, pytest.raises(ModelInputError, match=match):
        model.run(feeds)


@pytest.mark.slow
def test_run_refuses_inputs_in_the_serving_clients_words(keras_export: KerasExport) -> None:
    # One rule, one message: what LocalModel.run says is what ServingClient says before a call.
    from tfship.serve_client import InProcessTransport, InvalidInputError, ServingClient
    from tfship.server import ModelServer, ServerOptions

    feeds = {"a": np.zeros((1, 3), np.float64), "b": np.zeros(1, np.int64)}
    with load(keras_export.path) as model, pytest.raises(ModelInputError) as local:
        model.run(feeds)
    options = ServerOptions(port=0)
    with ModelServer.from_base_path(keras_export.path.parent, "m", options=options) as server:
        transport = InProcessTransport(server)
        with ServingClient(transport=transport, timeout=20) as client:
            with pytest.raises(InvalidInputError) as remote:
                client.predict("m", feeds)
    assert str(local.value) in str(remote.value)


def test_run_takes_python_values_and_casts_when_asked(keras_export: KerasExport) -> None:
    wide = {"a": np.array([[0.5, 1.0, 2.0]]), "b": np.array([2])}  # float64 and int64
    with load(keras_export.path) as model:
        exact = model.run({"a": np.array([[0.5, 1.0, 2.0]], np.float32), "b": np.array([2])})
        from_lists = model.run({"a": [[0.5, 1.0, 2.0]], "b": [2]})
        cast = model.run(wide, cast=True)
    np.testing.assert_array_equal(from_lists["score"], exact["score"])
    np.testing.assert_array_equal(cast["score"], exact["score"])


def test_run_leaves_shapes_to_the_graph_as_tf_serving_does(keras_export: KerasExport) -> None:
    # No check against the signature's [?, 3] before the call: the matmul refuses [1, 4] itself.
    feeds = {"a": np.zeros((1, 4), np.float32), "b": np.zeros(1, np.int64)}
    with (
        load(keras_export.path) as model,
        pytest.raises(
            ModelInputError, match=r"rejected its inputs: Matrix size-incompatible: In\[0\]: \[1,4\]"
        ),
    ):
        model.run(feeds)


def test_run_sparse_input_needs_a_triple(estimator_exports: EstimatorExports) -> None:
    rows = make_rows(2, seed=3)
    feeds = {"x": rows["x"], "v2": rows["v2"], "color": rows["color"], "tags": rows["tags"]}
    with (
        load(estimator_exports.raw) as model,
        pytest.raises(ModelInputError, match=r"input 'tags' is sparse: expected an \(indices, values"),
    ):
        model.run(feeds)


def test_unknown_output_and_signature_list_the_valid_ones(keras_export: KerasExport) -> None:
    feeds = {"a": np.zeros((1, 3), np.float32), "b": np.zeros(1, np.int64)}
    with load(keras_export.path) as model:
        with pytest.raises(ModelInputError, match=r"no output 'nope'; valid outputs: score"):
            model.run(feeds, outputs=["nope"])
        with pytest.raises(SignatureNotFoundError, match=r"'predict' not found.*serving_default"):
            model.run(feeds, signature="predict")
    # Keras 3's model.export also writes its "serve" endpoint
    with pytest.raises(SignatureNotFoundError, match=r"valid signatures: (serve, )?serving_default$"):
        load(keras_export.path, signature="classify")


def test_load_errors_name_the_path_and_choices(keras_export: KerasExport, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=str(tmp_path / "nothing")):
        load(tmp_path / "nothing")
    with pytest.raises(SignatureNotFoundError, match="serve"):
        load(keras_export.path, tags=("train",))


def test_a_closed_model_refuses_new_calls(keras_export: KerasExport) -> None:
    model = load(keras_export.path)
    model.run({"a": np.zeros((1, 3), np.float32), "b": np.zeros(1, np.int64)})  # cached callable
    model.close()
    model.close()  # idempotent
    with pytest.raises(ModelError, match="closed"):
        model.run({"a": np.zeros((1, 3), np.float32), "b": np.zeros(1, np.int64)})


def test_a_model_failure_is_one_line_without_node_dump(
    estimator_exports: EstimatorExports,
) -> None:
    garbage = np.array([b"not a serialized example"], dtype=object)
    with load(estimator_exports.parsing) as model:
        with pytest.raises(ModelInputError, match="the model rejected its inputs") as info:
            model.run({"inputs": garbage})
    assert "\n" not in str(info.value) and "[[" not in str(info.value)
