"""A custom ``model_fn`` Estimator exported with a parsing receiver, as a builder for
``estimator_lane.build`` (``"serve_client/custom_builds:custom_parsing_base"``).

Its one signature, ``serving_default``, is a Predict signature whose only input is
``examples``, serialized ``tf.train.Example`` s, the export most custom Estimators ship. Its
outputs are exact functions of the features, so a test can check what the server parsed.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any


def custom_parsing_base(root: Path) -> Path:
    """Version 1 of ``custom`` under ``root/custom``. Features: ``bill`` (float, default 40),
    ``n`` (int64, default 0) and ``island`` (string, default ""). Outputs: ``doubled`` (2 *
    bill), ``next`` (n + 1) and ``island`` (as parsed)."""
    import tensorflow as tf

    with warnings.catch_warnings():  # tf.estimator warns on import
        warnings.simplefilter("ignore")
        from tensorflow_estimator import estimator as est

    spec = {
        "bill": tf.io.FixedLenFeature([1], tf.float32, default_value=[40.0]),
        "n": tf.io.FixedLenFeature([1], tf.int64, default_value=[0]),
        "island": tf.io.FixedLenFeature([1], tf.string, default_value=[""]),
    }

    def model_fn(features: Any, labels: Any, mode: Any) -> Any:
        w = tf.compat.v1.get_variable("w", [1, 1], initializer=tf.compat.v1.zeros_initializer())
        predictions = {
            "doubled": features["bill"] * 2.0,
            "next": features["n"] + 1,
            "island": features["island"],
        }
        if mode == est.ModeKeys.PREDICT:
            return est.EstimatorSpec(
                mode,
                predictions=predictions,
                export_outputs={"serving_default": est.export.PredictOutput(predictions)},
            )
        loss = tf.reduce_mean(tf.square(tf.matmul(features["bill"], w) - labels))
        step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.001).minimize(loss, global_step=step)
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn() -> Any:
        features = {"bill": [[35.0], [45.0]], "n": [[1], [2]], "island": [["Dream"], ["Biscoe"]]}
        return tf.data.Dataset.from_tensor_slices((features, [[0.0], [1.0]])).batch(2)

    config = est.RunConfig(
        model_dir=str(root / "model_dir"), save_summary_steps=1000, log_step_count_steps=1000
    )
    model = est.Estimator(model_fn, config=config)
    model.train(input_fn, steps=1)
    receiver = est.export.build_parsing_serving_input_receiver_fn(spec)
    exported = Path(model.export_saved_model(str(root / "export"), receiver).decode())
    base = root / "custom"
    base.mkdir()
    exported.rename(base / "1")
    shutil.rmtree(exported.parent)
    return base
