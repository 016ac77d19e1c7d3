"""Tiny real models shared by the loader tests: one Estimator with two exports, one Keras model."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from estimator_lane import build
from loaders.support import EstimatorExports, KerasExport, ModuleExport


@pytest.fixture(scope="session")
def estimator_exports(tmp_path_factory: pytest.TempPathFactory) -> EstimatorExports:
    built = build("estimator_builds:loader_exports", tmp_path_factory.mktemp("estimator"))
    return EstimatorExports(*(Path(built[k]) for k in ("parsing", "raw", "scalar", "predictions")))


@pytest.fixture(scope="session")
def keras_export(tmp_path_factory: pytest.TempPathFactory) -> KerasExport:
    """A functional Keras model saved the way its Keras saves for serving: Keras 2 with
    ``tf.saved_model.save``, Keras 3 (TensorFlow 2.16 and later) with ``model.export``."""
    import tensorflow as tf

    keras = tf.keras
    keras.utils.set_random_seed(1)
    a = keras.Input(shape=(3,), name="a", dtype="float32")
    b = keras.Input(shape=(), name="b", dtype="int64")
    hidden = keras.layers.Dense(4, activation="relu")(a)
    shift = keras.layers.Lambda(lambda t: tf.cast(tf.expand_dims(t, 1), tf.float32))(b)
    shifted = keras.layers.Add()([hidden, shift])
    out = keras.layers.Dense(2, name="score")(shifted)
    model = keras.Model({"a": a, "b": b}, {"score": out})
    path = tmp_path_factory.mktemp("keras") / "1"
    if int(version("keras").split(".")[0]) >= 3:
        model.export(str(path), format="tf_saved_model", verbose=False)
    else:
        tf.saved_model.save(model, str(path))
    return KerasExport(model.get_weights(), path)


@pytest.fixture(scope="session")
def module_export(tmp_path_factory: pytest.TempPathFactory) -> ModuleExport:
    import tensorflow as tf

    class Summer(tf.Module):  # type: ignore[misc,name-defined]
        @tf.function(
            input_signature=[
                tf.TensorSpec([None, 3], tf.float32, name="x"),
                tf.SparseTensorSpec([None, None], tf.int64),
            ]
        )
        def __call__(self, x: Any, s: Any) -> Any:
            total = tf.sparse.reduce_sum(s, axis=1, output_is_sparse=False)
            return {"y": tf.reduce_sum(x, axis=1) + tf.cast(total, tf.float32)}

    module = Summer()
    path = tmp_path_factory.mktemp("module") / "1"
    tf.saved_model.save(module, str(path), signatures=module.__call__)
    return ModuleExport(path)
