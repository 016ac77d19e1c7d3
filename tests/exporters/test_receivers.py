"""Receivers: parity with tf.estimator's signatures where it is right, fixes where it is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from export_helpers import data, examples, parse_spec, run_signature, saved_signatures, sparse_tags, tree

from tfship.exporters import both_receiver, export_model, parsing_receiver, raw_receiver
from tfship.exporters._shared import build_receiver


def _tags(path: Path) -> list[str]:
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel.FromString((path / "saved_model.pb").read_bytes())
    return [tag for mg in sm.meta_graphs for tag in mg.meta_info_def.tags]


def _inputs(sig: Any) -> list[str]:
    return sorted(sig.inputs)


def test_parsing_receiver_matches_tf_estimator(classifier: Any, tmp_path: Path) -> None:
    from tensorflow_estimator import estimator

    ours = export_model(classifier, tmp_path / "ours", parsing_receiver(parse_spec())).path
    fn = estimator.export.build_parsing_serving_input_receiver_fn(parse_spec())
    theirs = Path(classifier.export_saved_model(str(tmp_path / "theirs"), fn).decode())
    ours_sigs, their_sigs = saved_signatures(ours), saved_signatures(theirs)
    assert set(ours_sigs) == set(their_sigs) == {"serving_default", "classification", "regression", "predict"}
    for key, sig in their_sigs.items():
        assert _inputs(ours_sigs[key]) == _inputs(sig)
        assert sorted(ours_sigs[key].outputs) == sorted(sig.outputs)
        assert ours_sigs[key].method_name == sig.method_name
        assert ours_sigs[key].inputs[_inputs(sig)[0]].name == "input_example_tensor:0"
    assert _inputs(ours_sigs["serving_default"]) == ["inputs"]
    assert _inputs(ours_sigs["predict"]) == ["examples"]
    assert sorted(ours_sigs["classification"].outputs) == ["classes", "scores"]
    assert _tags(ours) == _tags(theirs) == ["serve"]
    # Same layout apart from our metadata file.
    assert [f for f in tree(ours) if not f.startswith("assets.extra")] == tree(theirs)
    assert (ours / "variables" / "variables.data-00000-of-00001").exists()


def test_raw_receiver_keeps_serving_default_where_tf_estimator_drops_it(
    classifier: Any, tmp_path: Path, export_logs: Any
) -> None:
    import tensorflow as tf
    from tensorflow_estimator import estimator

    fn = estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.constant([1.0]), "color": tf.constant([b"r"])}
    )
    with pytest.raises(Exception):  # noqa: B017 - the canned model needs 'tags': any error
        classifier.export_saved_model(str(tmp_path / "theirs"), fn)
    result = export_model(classifier, tmp_path / "ours", raw_receiver(parse_spec()))
    sigs = saved_signatures(result.path)
    assert set(sigs) == {"serving_default", "predict"}
    assert _inputs(sigs["serving_default"]) == ["color", "tags", "x"]
    assert result.signatures.written["serving_default"]["from"] == "predict"
    assert set(result.signatures.excluded) == {"classification", "regression"}
    assert "single tensor input of type tf.string" in result.signatures.excluded["classification"]
    assert "got 3 input(s): color, tags, x" in result.signatures.excluded["regression"]
    line = next(m for m in export_logs() if m.startswith("signatures:"))
    assert "serving_default (predict)" in line and "excluded classification" in line


def test_tf_estimator_raw_receiver_has_only_predict(classifier: Any, tmp_path: Path) -> None:
    # The reference fact our raw receiver fixes: with a raw receiver, no serving_default.
    import tensorflow as tf

    def fn() -> Any:
        from tensorflow_estimator import estimator

        feats = {
            "x": tf.compat.v1.placeholder(tf.float32, [None], name="x"),
            "color": tf.compat.v1.placeholder(tf.string, [None], name="color"),
            "tags": tf.compat.v1.sparse_placeholder(tf.string, name="tags"),
        }
        return estimator.export.ServingInputReceiver(feats, feats)

    theirs = Path(classifier.export_saved_model(str(tmp_path / "theirs"), fn).decode())
    assert set(saved_signatures(theirs)) == {"predict"}


def test_sparse_feature_round_trips_through_raw_receiver(classifier: Any, tmp_path: Path) -> None:
    result = export_model(classifier, tmp_path, raw_receiver(parse_spec()))
    info = saved_signatures(result.path)["serving_default"].inputs["tags"]
    assert info.HasField("coo_sparse")
    for n, seed in ((5, 3), (2, 4)):  # two batch sizes
        d = data(n, seed)
        feeds = {"x": d["x"], "color": d["color"].astype(object), "tags": sparse_tags(d["tags"])}
        got = run_signature(result.path, "serving_default", feeds)
        predictions = classifier.predict(_input_fn(n, seed), yield_single_examples=False)
        expected = next(iter(predictions))["probabilities"]
        assert got["probabilities"].shape == (n, 2)
        np.testing.assert_allclose(got["probabilities"], expected, rtol=1e-5)


def _input_fn(n: int, seed: int) -> Any:
    return lambda: _dataset(n, seed)


def _dataset(n: int, seed: int) -> Any:
    import tensorflow as tf

    d = data(n, seed)
    idx, vals, shape = sparse_tags(d["tags"])
    tags = tf.sparse.SparseTensor(idx, vals.astype(bytes), shape)
    return tf.data.Dataset.from_tensors({"x": d["x"], "color": d["color"], "tags": tags})


def test_both_receiver_serves_examples_and_raw_tensors_alike(classifier: Any, tmp_path: Path) -> None:
    result = export_model(classifier, tmp_path, both_receiver(parse_spec()))
    sigs = saved_signatures(result.path)
    assert {"serving_default", "classification", "predict", "raw:predict"} <= set(sigs)
    assert _inputs(sigs["raw:predict"]) == ["color", "tags", "x"]
    d = data(4, 7)
    ex = np.array([e.SerializeToString() for e in examples(4, 7)], dtype=object)
    by_example = run_signature(result.path, "predict", {"examples": ex})
    raw = {"x": d["x"], "color": d["color"].astype(object), "tags": sparse_tags(d["tags"])}
    by_raw = run_signature(result.path, "raw:predict", raw)
    np.testing.assert_allclose(by_example["probabilities"], by_raw["probabilities"], rtol=1e-6)


def test_both_receiver_with_raw_default(classifier: Any, tmp_path: Path) -> None:
    result = export_model(classifier, tmp_path, both_receiver(parse_spec(), default="raw"))
    sigs = saved_signatures(result.path)
    assert _inputs(sigs["serving_default"]) == ["color", "tags", "x"]
    assert _inputs(sigs["parsing:classification"]) == ["inputs"]
    assert _inputs(sigs["parsing:predict"]) == ["examples"]


def test_tensor_specs_keep_full_shape_and_dtype() -> None:
    import tensorflow as tf

    specs = {
        "dense": tf.TensorSpec([None, 2], tf.float64),
        "ids": tf.SparseTensorSpec([None, None], tf.int64),
        "words": tf.RaggedTensorSpec([None, None], tf.string, ragged_rank=1),
    }
    receiver = raw_receiver(specs, default_batch_size=3)
    with tf.Graph().as_default():
        built = receiver()
    dense = built.receiver_tensors["dense"]
    assert dense.shape.as_list() == [3, 2] and dense.dtype == tf.float64
    assert isinstance(built.receiver_tensors["ids"], tf.sparse.SparseTensor)
    assert isinstance(built.receiver_tensors["words"], tf.RaggedTensor)
    assert receiver.parse_spec is None  # float64 cannot travel in a tf.Example
    with pytest.raises(ValueError, match="tf.Example"):
        build_receiver(specs, "parsing")


def test_parsing_receiver_from_feature_columns_and_batch_size() -> None:
    import tensorflow as tf
    from export_helpers import feature_columns

    receiver = parsing_receiver(feature_columns(), receiver_key="ex", default_batch_size=2)
    with tf.Graph().as_default():
        built = receiver()
    (key,) = built.receiver_tensors
    tensor = built.receiver_tensors[key]
    assert key == "ex" and tensor.shape.as_list() == [2] and tensor.dtype == tf.string
    assert isinstance(built.features["tags"], tf.sparse.SparseTensor)


@pytest.mark.parametrize(
    ("source", "error", "match"),
    [
        (42, TypeError, "Schema, a parse spec"),
        ({"x": 1.0}, TypeError, "only tf.io parsing features"),
    ],
)
def test_bad_sources_are_rejected(source: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        build_receiver(source, "raw")


def test_rank_zero_spec_is_rejected() -> None:
    import tensorflow as tf

    with pytest.raises(ValueError, match="feature 'x'.*batch"):
        raw_receiver({"x": tf.TensorSpec([], tf.float32)})


def test_model_without_predict_output_still_gets_serving_default(tmp_path: Path) -> None:
    import tensorflow as tf
    from tensorflow_estimator import estimator as est_mod

    def model_fn(features: Any, labels: Any, mode: Any) -> Any:
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        pred = features["x"] * w
        if mode == est_mod.ModeKeys.PREDICT:
            out = {"serving_default": est_mod.export.RegressionOutput(pred)}
            return est_mod.EstimatorSpec(mode, predictions=pred, export_outputs=out)
        loss = tf.reduce_mean(tf.square(pred - labels))
        step = tf.compat.v1.train.get_global_step()
        return est_mod.EstimatorSpec(mode, loss=loss, train_op=step.assign_add(1))

    est = est_mod.Estimator(model_fn, model_dir=str(tmp_path / "m"))
    est.train(lambda: tf.data.Dataset.from_tensors(({"x": [1.0]}, [2.0])), steps=1)
    result = export_model(est, tmp_path / "e", raw_receiver({"x": tf.TensorSpec([None], tf.float32)}))
    assert result.signatures.written["serving_default"]["method"] == "predict"
    out = run_signature(result.path, "serving_default", {"x": np.array([3.0], np.float32)})
    assert out["outputs"].shape == (1,)


def test_regression_head_serves_regress_by_default(tmp_path: Path) -> None:
    import tensorflow as tf
    from tensorflow_estimator import estimator

    cols = [tf.feature_column.numeric_column("x")]
    est = estimator.LinearRegressor(cols, model_dir=str(tmp_path / "m"))
    est.train(lambda: tf.data.Dataset.from_tensors(({"x": [1.0, 2.0]}, [1.0, 2.0])), steps=2)
    spec = {"x": tf.io.FixedLenFeature([], tf.float32)}
    ours = export_model(est, tmp_path / "ours", parsing_receiver(spec))
    fn = estimator.export.build_parsing_serving_input_receiver_fn(spec)
    theirs = Path(est.export_saved_model(str(tmp_path / "theirs"), fn).decode())
    ours_sigs, their_sigs = saved_signatures(ours.path), saved_signatures(theirs)
    assert set(ours_sigs) == set(their_sigs) == {"serving_default", "regression", "predict"}
    assert ours_sigs["serving_default"].method_name == "tensorflow/serving/regress"
    assert sorted(ours_sigs["regression"].outputs) == sorted(their_sigs["regression"].outputs) == ["outputs"]
