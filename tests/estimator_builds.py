"""The Estimators the suite trains and exports, as builders for ``estimator_lane.build``.

Each builder takes a directory, trains and exports there with ``tf.estimator`` (so it runs on the
estimator lane only, in the test process or as a subprocess of the run lane) and returns what
the fixtures need as JSON-able values. What a test compares against, such as
``estimator.predict`` on given rows, is computed here too, by TensorFlow 2.15, so that both lanes
compare with the same numbers.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np


def _est() -> Any:
    with warnings.catch_warnings():  # tf.estimator warns on import; warnings are errors in tests
        warnings.simplefilter("ignore")
        from tensorflow_estimator import estimator

    return estimator


def tiny_model(workdir: Path) -> dict[str, Any]:
    """A dnn trained by ``tfship.trainer`` for a few steps on the penguins, with best, latest and
    final exports (the suite's ``tiny_model``)."""
    from tfship.data import infer_schema, penguins_split
    from tfship.trainer import ModelOptions, RunOptions, train

    train_csv, eval_csv = penguins_split(workdir / "data")
    schema = infer_schema(train_csv, "species")
    schema_path = workdir / "schema.json"
    schema.save(schema_path)
    result = train(
        schema,
        workdir / "model",
        [str(train_csv)],
        [str(eval_csv)],
        model=ModelOptions("dnn", hidden_units=(8,)),
        run=RunOptions(max_steps=60, checkpoint_every=30, log_every=30),
    )
    return {
        "schema_path": schema_path,
        "train_csv": train_csv,
        "eval_csv": eval_csv,
        "model_dir": workdir / "model",
        "exports": result.exports,
    }


def linear_base(directory: Path) -> Path:
    """A binary LinearClassifier trained a few steps, exported with a parsing receiver as version 1
    of a base path (the server tests' ``linear`` model)."""
    import tensorflow as tf

    est = _est()
    column = tf.feature_column.numeric_column("x")
    classifier = est.LinearClassifier(
        feature_columns=[column], model_dir=str(directory / "model_dir"), n_classes=2
    )

    def input_fn() -> Any:
        data = {"x": np.array([[0.0], [1.0], [2.0], [3.0]], np.float32)}
        labels = np.array([[0], [0], [1], [1]], np.int64)
        return tf.data.Dataset.from_tensor_slices((data, labels)).repeat().batch(4)

    classifier.train(input_fn, steps=3)
    spec = tf.feature_column.make_parse_example_spec([column])
    receiver = est.export.build_parsing_serving_input_receiver_fn(spec)
    exported = classifier.export_saved_model(str(directory / "export"), receiver)
    return _as_version_one(exported, directory / "base")


def string_classifier_base(root: Path) -> Path:
    """A LinearClassifier of three string classes trained a few steps, exported with a parsing
    receiver as version 1 of ``penguins``: serving_default and classification classify, predict
    predicts (the client tests' ``classifier_base``)."""
    import tensorflow as tf

    est = _est()
    columns = [
        tf.feature_column.numeric_column("bill"),
        tf.feature_column.indicator_column(
            tf.feature_column.categorical_column_with_vocabulary_list("island", ["Biscoe", "Dream"])
        ),
    ]
    classifier = est.LinearClassifier(
        feature_columns=columns,
        model_dir=str(root / "model_dir"),
        n_classes=3,
        label_vocabulary=["A", "B", "C"],
    )

    def input_fn() -> Any:
        data = {"bill": [[35.0], [45.0], [50.0]], "island": [["Dream"], ["Biscoe"], ["Biscoe"]]}
        labels = [["A"], ["B"], ["C"]]
        return tf.data.Dataset.from_tensor_slices((data, labels)).repeat().batch(3)

    classifier.train(input_fn, steps=3)
    spec = tf.feature_column.make_parse_example_spec(columns)
    receiver = est.export.build_parsing_serving_input_receiver_fn(spec)
    exported = classifier.export_saved_model(str(root / "export"), receiver)
    return _as_version_one(exported, root / "penguins")


def _as_version_one(exported: bytes, base: Path) -> Path:
    export = Path(exported.decode())
    base.mkdir()
    export.rename(base / "1")
    shutil.rmtree(export.parent)
    return base


# The rows (count, seed of loaders.support.make_rows) on which the loader tests compare with
# ``estimator.predict``; the builder predicts each once.
PREDICTED_ROWS = ((20, 5), (6, 2), (24, 41), (40, 21), (24, 11))
PREDICTIONS = "predictions.npz"


def loader_exports(root: Path) -> dict[str, Any]:
    """A DNNClassifier on numeric, fixed-length, categorical and var-length features, exported
    three ways (parsing, raw with a sparse placeholder, parsing ``x`` as a scalar), and its
    ``estimator.predict`` on :data:`PREDICTED_ROWS` (the loader tests' ``estimator_exports``)."""
    import tensorflow as tf

    from loaders.support import COLORS, ROWS, features_fn, make_rows, rows_key

    est = _est()
    fc = tf.feature_column
    columns = [
        fc.numeric_column("x", default_value=0.0),
        fc.numeric_column("v2", shape=[2]),
        fc.indicator_column(fc.categorical_column_with_vocabulary_list("color", COLORS)),
        fc.embedding_column(fc.categorical_column_with_hash_bucket("tags", 16), 3),
    ]
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

    arrays: dict[str, Any] = {}
    for n, seed in PREDICTED_ROWS:
        predict_rows = make_rows(n, seed)

        def input_fn(predict_rows: dict[str, Any] = predict_rows) -> Any:
            return tf.data.Dataset.from_tensors(features_fn(tf, predict_rows))

        predictions = list(model.predict(input_fn, yield_single_examples=True))
        for key in predictions[0]:
            stacked = np.stack([p[key] for p in predictions])
            if stacked.dtype == object:  # bytes (classes): stored as fixed-width bytes, not pickled
                stacked = stacked.astype(bytes)
            arrays[f"{rows_key(predict_rows)}__{key}"] = stacked
    np.savez(root / PREDICTIONS, **arrays)
    return {
        "parsing": parsing.decode(),
        "raw": raw.decode(),
        "scalar": scalar.decode(),
        "predictions": root / PREDICTIONS,
    }
