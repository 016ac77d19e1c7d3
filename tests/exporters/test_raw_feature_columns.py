"""A raw receiver from feature columns publishes inputs TF Serving's Predict API can feed."""

from __future__ import annotations

import json
import logging
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from export_helpers import feature_columns, parse_spec, run_signature, saved_signatures

from tfship.errors import ModelInputError
from tfship.exporters import both_receiver, export_model, parsing_receiver, raw_receiver
from tfship.loaders import load

pytestmark = pytest.mark.slow


def _example(x: float, color: bytes, tags: list[bytes]) -> bytes:
    import tensorflow as tf

    feats = {
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
        "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[color])),
        "tags": tf.train.Feature(bytes_list=tf.train.BytesList(value=tags)),
    }
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


def test_categorical_columns_are_dense_inputs_a_json_client_can_send(classifier: Any, tmp_path: Path) -> None:
    from tfship.server import ModelServer, ServerOptions

    raw = export_model(classifier, tmp_path / "raw", raw_receiver(feature_columns()))
    inputs = saved_signatures(raw.path)["serving_default"].inputs
    assert {k: v.WhichOneof("encoding") for k, v in inputs.items()} == {
        "x": "name",
        "color": "name",
        "tags": "name",
    }
    assert [d.size for d in inputs["color"].tensor_shape.dim] == [-1]
    body = {"instances": [{"x": [0.5], "color": "g", "tags": "a"}, {"x": [-1.0], "color": "b", "tags": "b"}]}
    options = ServerOptions(port=0, rest_port=0)
    with ModelServer.from_base_path(str(tmp_path / "raw"), "m", options=options) as server:
        server.wait_until_available("m")
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.rest_port}/v1/models/m:predict",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            predictions = json.loads(answer.read())["predictions"]
    # one value per example: the same answer as tf.Examples holding one value each
    parsing = export_model(classifier, tmp_path / "parsing", parsing_receiver(feature_columns()))
    examples = np.array([_example(0.5, b"g", [b"a"]), _example(-1.0, b"b", [b"b"])], dtype=object)
    expected = run_signature(parsing.path, "predict", {"examples": examples})["probabilities"]
    got = np.array([p["probabilities"] for p in predictions])
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_a_sparse_raw_input_is_named_at_export_time(
    classifier: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tfship.exporters")
    export_model(classifier, tmp_path, raw_receiver(parse_spec()), verify=False)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "input 'tags' of signature(s) predict, serving_default is sparse (variable-length): "
        "TF Serving's Predict API (REST and gRPC) cannot feed it; if it has one value per "
        "example, say so in the receiver's source (tf.io.FixedLenFeature([], dtype), "
        'tf.TensorSpec([None], dtype), or "shape": [] in a schema), else send its values in '
        "tf.Examples (receiver 'parsing' or 'both')"
    ]


def test_a_string_for_a_sparse_input_is_not_split_into_rows(classifier: Any, tmp_path: Path) -> None:
    result = export_model(classifier, tmp_path, raw_receiver(parse_spec()), verify=False)
    model = load(result.path)
    rows = {"x": [0.5, -0.5], "color": ["r", "g"]}
    assert model.predict({**rows, "tags": [["a"], ["b"]]})["probabilities"].shape == (2, 2)
    refused = r"input 'tags' is sparse .* got the string 'ab'; pass \['ab'\]"
    with pytest.raises(ModelInputError, match=refused):
        model.predict({**rows, "tags": "ab"})


def _student_rows() -> dict[str, Any]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=48).astype("float32")
    student = np.array(["yes", "no"], dtype=object)[(x > 0).astype(int)]
    return {"x": x, "student": student, "label": (x > 0).astype("int64")}


@pytest.fixture(scope="module")
def wide_and_deep(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A canned wide-and-deep classifier whose only categorical is a vocabulary list."""
    import tensorflow as tf
    from tensorflow_estimator import estimator as est

    fc = tf.feature_column
    student = fc.categorical_column_with_vocabulary_list("student", ["yes", "no"])
    model = est.DNNLinearCombinedClassifier(
        linear_feature_columns=[student],
        dnn_feature_columns=[fc.numeric_column("x"), fc.indicator_column(student)],
        dnn_hidden_units=[4],
        model_dir=str(tmp_path_factory.mktemp("wide_and_deep")),
        config=est.RunConfig(tf_random_seed=1),
    )
    rows = _student_rows()

    def input_fn() -> Any:
        features = {"x": rows["x"], "student": rows["student"].astype(bytes)}
        return tf.data.Dataset.from_tensors((features, rows["label"])).repeat()

    model.train(input_fn, max_steps=5)
    return model, [fc.numeric_column("x"), student, fc.indicator_column(student)]


def test_both_receiver_raw_signature_takes_dense_categoricals_over_rest(
    wide_and_deep: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import tensorflow as tf

    from tfship.server import ModelServer, ServerOptions

    model, columns = wide_and_deep
    caplog.set_level(logging.WARNING, logger="tfship.exporters")
    result = export_model(model, tmp_path, both_receiver(columns))
    assert [r.getMessage() for r in caplog.records if r.name == "tfship.exporters"] == []
    raw = saved_signatures(result.path)["raw:predict"].inputs
    assert {k: [d.size for d in v.tensor_shape.dim] for k, v in raw.items()} == {
        "x": [-1, 1],
        "student": [-1],
    }
    rows = [{"x": [0.7], "student": "yes"}, {"x": [-0.4], "student": "no"}]
    body = {"signature_name": "raw:predict", "instances": rows}
    options = ServerOptions(port=0, rest_port=0)
    with ModelServer.from_base_path(str(tmp_path), "m", options=options) as server:
        server.wait_until_available("m")
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.rest_port}/v1/models/m:predict",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            got = np.array([p["probabilities"] for p in json.loads(answer.read())["predictions"]])

    def predict_input_fn() -> Any:
        features = {"x": np.array([0.7, -0.4], "float32"), "student": np.array([b"yes", b"no"])}
        return tf.data.Dataset.from_tensors(features)

    expected = np.array([p["probabilities"] for p in model.predict(predict_input_fn)])
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # The parsing signature reads the same one value per example, and refuses a second one.
    examples = np.array([_student(0.7, [b"yes"]), _student(-0.4, [b"no"])], dtype=object)
    by_example = run_signature(result.path, "predict", {"examples": examples})["probabilities"]
    np.testing.assert_allclose(by_example, expected, rtol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="student"):
        run_signature(result.path, "predict", {"examples": np.array([_student(0.7, [b"yes", b"no"])])})


def _student(x: float, student: list[bytes]) -> bytes:
    import tensorflow as tf

    feats = {
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
        "student": tf.train.Feature(bytes_list=tf.train.BytesList(value=student)),
    }
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()
