"""Tiny real models shared by the loader tests: one Estimator with two exports, one Keras model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loaders.support import (
    COLORS,
    ROWS,
    EstimatorExports,
    KerasExport,
    ModuleExport,
    features_fn,
    make_rows,
)


@pytest.fixture(scope="session")
def estimator_exports(tmp_path_factory: pytest.TempPathFactory) -> EstimatorExports:
    import tensorflow as tf
    from tensorflow_estimator import estimator as est

    fc = tf.feature_column
    columns = [
        fc.numeric_column("x", default_value=0.0),
        fc.numeric_column("v2", shape=[2]),
        fc.indicator_column(fc.categorical_column_with_vocabulary_list("color", COLORS)),
        fc.embedding_column(fc.categorical_column_with_hash_bucket("tags", 16), 3),
    ]
    root = tmp_path_factory.mktemp("estimator")
    rows = make_rows(ROWS, seed=0)
    labels = (rows["x"] + rows["v2"][:, 0] > 0).astype(np.int64)

    def train_fn() -> Any:
        return tf.data.Dataset.from_tensors((features_fn(tf, rows), labels)).repeat()

    model = est.DNNClassifier(
        hidden_units=[8], feature_columns=columns, model_dir=str(root / "model"), n_classes=2
    )
    model.train(train_fn, steps=5)
    spec = fc.make_parse_example_spec(columns)
    parsing = model.export_saved_model(
        str(root / "parsing"), est.export.build_parsing_serving_input_receiver_fn(spec)
    )

    def raw_receiver() -> Any:
        g = tf.compat.v1
        receivers = {
            "x": g.placeholder(tf.float32, [None], name="x"),
            "v2": g.placeholder(tf.float32, [None, 2], name="v2"),
            "color": g.placeholder(tf.string, [None], name="color"),
            "tags": g.sparse_placeholder(tf.string, [None, None], name="tags"),
        }
        return est.export.ServingInputReceiver(receivers, receivers)

    raw = model.export_saved_model(str(root / "raw"), raw_receiver)
    # The same model parsing x as a scalar (shape []) rather than the column's [1].
    scalar_spec = {**spec, "x": tf.io.FixedLenFeature([], tf.float32, default_value=0.0)}
    scalar = model.export_saved_model(
        str(root / "scalar"), est.export.build_parsing_serving_input_receiver_fn(scalar_spec)
    )
    return EstimatorExports(
        model, columns, rows, Path(parsing.decode()), Path(raw.decode()), Path(scalar.decode())
    )


@pytest.fixture(scope="session")
def keras_export(tmp_path_factory: pytest.TempPathFactory) -> KerasExport:
    import tensorflow as tf

    tf.keras.utils.set_random_seed(1)
    a = tf.keras.Input(shape=(3,), name="a", dtype="float32")
    b = tf.keras.Input(shape=(), name="b", dtype="int64")
    hidden = tf.keras.layers.Dense(4, activation="relu")(a)
    shifted = hidden + tf.cast(tf.expand_dims(b, 1), tf.float32)
    out = tf.keras.layers.Dense(2, name="score")(shifted)
    model = tf.keras.Model({"a": a, "b": b}, {"score": out})
    path = tmp_path_factory.mktemp("keras") / "1"
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
