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
        "global_step": result.global_step,
        "metrics": {name: float(value) for name, value in result.metrics.items()},
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


# --- exports of every kind TF 2.15 writes, with the answers TF 2.15 gives ---------------------

CROSS_ROWS = 12
CROSS_ANSWERS = "answers.json"


def _tensor_json(array: Any) -> dict[str, Any]:
    """A tensor as JSON: bytes in base64 (serialized Examples hold NUL bytes), numbers as lists
    (a float32 through a Python float and back is exact)."""
    import base64

    array = np.asarray(array)
    if array.dtype == object or array.dtype.kind == "S":
        flat = [base64.b64encode(bytes(v)).decode() for v in array.reshape(-1)]
        return {"dtype": "bytes", "shape": list(array.shape), "b64": flat}
    return {"dtype": array.dtype.name, "shape": list(array.shape), "values": array.reshape(-1).tolist()}


def _cross_rows() -> dict[str, Any]:
    rng = np.random.default_rng(15)
    return {
        "x": rng.normal(size=CROSS_ROWS).astype(np.float32),
        "n": rng.integers(0, 40, CROSS_ROWS).astype(np.int64),
        "city": rng.choice(["lyon", "oslo", "lima"], CROSS_ROWS).astype(object),
    }


def _cross_examples(rows: dict[str, Any]) -> Any:
    import tensorflow as tf

    feature = tf.train.Feature
    serialized = []
    for i in range(CROSS_ROWS):
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    "x": feature(float_list=tf.train.FloatList(value=[rows["x"][i]])),
                    "n": feature(int64_list=tf.train.Int64List(value=[rows["n"][i]])),
                    "city": feature(bytes_list=tf.train.BytesList(value=[rows["city"][i].encode()])),
                }
            )
        )
        serialized.append(example.SerializeToString())
    return np.array(serialized, dtype=object)


def _cross_answers(path: Path, feeds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each signature's answer to its feeds, by TensorFlow 2.15 itself: a TF1 session as TF
    Serving runs the export."""
    import tensorflow as tf

    v1 = tf.compat.v1
    answers: dict[str, Any] = {}
    with tf.Graph().as_default(), v1.Session() as session:
        meta_graph = v1.saved_model.loader.load(session, ["serve"], str(path))
        for key, signature in sorted(meta_graph.signature_def.items()):
            if key.startswith("__"):
                continue
            feed = feeds[key]
            fetches = {name: info.name for name, info in signature.outputs.items()}
            got = session.run(fetches, {signature.inputs[name].name: feed[name] for name in feed})
            answers[key] = {
                "method": signature.method_name,
                "inputs": {name: _tensor_json(value) for name, value in feed.items()},
                "outputs": {name: _tensor_json(value) for name, value in got.items()},
            }
    return answers


def cross_tf(root: Path) -> dict[str, Any]:
    """Estimator exports as TensorFlow 2.15 writes them — canned and custom, parsing and raw
    receivers, tfship's trainer with both — and every signature's answer to fixed inputs, by TF
    2.15: what another TensorFlow must give back (``tests/loaders/test_across_tensorflow.py``)."""
    import tensorflow as tf

    est = _est()
    fc = tf.feature_column
    rows = _cross_rows()
    labels = (rows["x"] + rows["n"] / 20.0 > 1.0).astype(np.int64)
    city = fc.categorical_column_with_vocabulary_list("city", ["lyon", "oslo", "lima"])
    wide = [city, fc.numeric_column("n", dtype=tf.int64)]
    deep = [fc.numeric_column("x"), fc.indicator_column(city)]
    spec = fc.make_parse_example_spec(wide + deep)

    def features() -> dict[str, Any]:
        return {
            "x": tf.constant(rows["x"][:, None]),
            "n": tf.constant(rows["n"][:, None]),
            "city": tf.constant(rows["city"].astype(str)[:, None]),
        }

    def input_fn() -> Any:
        return tf.data.Dataset.from_tensors((features(), labels[:, None])).repeat()

    def regression_input_fn() -> Any:
        return tf.data.Dataset.from_tensors((features(), rows["x"][:, None] * 2.0)).repeat()

    def raw_receiver() -> Any:
        g = tf.compat.v1
        placeholders = {
            "x": g.placeholder(tf.float32, [None, 1], name="x"),
            "n": g.placeholder(tf.int64, [None, 1], name="n"),
            "city": g.placeholder(tf.string, [None, 1], name="city"),
        }
        return est.export.ServingInputReceiver(placeholders, placeholders)

    def custom_model_fn(features: Any, labels: Any, mode: Any) -> Any:
        inputs = tf.compat.v1.feature_column.input_layer(features, deep)
        logits = v1_dense(inputs, 3)
        predictions = {"logits": logits, "top": tf.argmax(logits, axis=1), "scores": tf.nn.softmax(logits)}
        if mode == est.ModeKeys.PREDICT:
            return est.EstimatorSpec(
                mode,
                predictions=predictions,
                export_outputs={"serving_default": est.export.PredictOutput(predictions)},
            )
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels[:, 0], logits)
        step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )
        return est.EstimatorSpec(mode, loss=loss, train_op=step)

    def v1_dense(inputs: Any, units: int) -> Any:
        kernel = tf.compat.v1.get_variable("kernel", [inputs.shape[1], units])
        return tf.matmul(inputs, kernel)

    parsing = est.export.build_parsing_serving_input_receiver_fn(spec)
    combined = est.DNNLinearCombinedClassifier(
        linear_feature_columns=wide,
        dnn_feature_columns=deep,
        dnn_hidden_units=[6],
        model_dir=str(root / "combined_model"),
    )
    combined.train(input_fn, steps=5)
    regressor = est.LinearRegressor(wide + deep[:1], model_dir=str(root / "regressor_model"))
    regressor.train(regression_input_fn, steps=5)
    custom = est.Estimator(custom_model_fn, model_dir=str(root / "custom_model"))
    custom.train(input_fn, steps=5)
    exports = {
        "canned_parsing": combined.export_saved_model(str(root / "canned_parsing"), parsing),
        "canned_raw": combined.export_saved_model(str(root / "canned_raw"), raw_receiver),
        "regressor_parsing": regressor.export_saved_model(str(root / "regressor_parsing"), parsing),
        "custom_parsing": custom.export_saved_model(str(root / "custom_parsing"), parsing),
    }
    examples = _cross_examples(rows)
    raw_feed = {"x": rows["x"][:, None], "n": rows["n"][:, None], "city": rows["city"].astype(bytes)[:, None]}
    answers: dict[str, Any] = {}
    for name, exported in exports.items():
        path = Path(exported.decode())
        inputs = raw_feed if name.endswith("_raw") else None
        with tf.Graph().as_default(), tf.compat.v1.Session() as session:
            meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(path))
            keys = [key for key in meta_graph.signature_def if not key.startswith("__")]
            feeds = {
                key: inputs or {next(iter(meta_graph.signature_def[key].inputs)): examples} for key in keys
            }
        answers[name] = {"path": path, "signatures": _cross_answers(path, feeds)}

    trained = tiny_model(root / "trainer_both")
    path = Path(trained["exports"]["best"][-1])
    answers["trainer_both"] = {"path": path, "signatures": _trainer_answers(path, Path(trained["eval_csv"]))}
    (root / CROSS_ANSWERS).write_text(__import__("json").dumps(answers, default=str))
    return {"answers": root / CROSS_ANSWERS}


def _trainer_answers(path: Path, eval_csv: Path) -> dict[str, Any]:
    """tfship's trainer exports both receivers: its parsing signatures take Examples of the eval
    rows, its raw ones the rows' columns."""
    import csv

    import tensorflow as tf

    with open(eval_csv, newline="") as stream:
        complete = [row for row in csv.DictReader(stream) if not {"", "NA"} & set(row.values())]
    rows = complete[:CROSS_ROWS]
    v1 = tf.compat.v1
    feeds: dict[str, dict[str, Any]] = {}
    with tf.Graph().as_default(), v1.Session() as session:
        meta_graph = v1.saved_model.loader.load(session, ["serve"], str(path))
        for key, signature in meta_graph.signature_def.items():
            if key.startswith("__"):
                continue
            feed = {}
            for name, info in signature.inputs.items():
                dtype = tf.dtypes.as_dtype(info.dtype)
                if dtype == tf.string and name in ("examples", "inputs") and name not in rows[0]:
                    feed[name] = _penguin_examples(rows)
                else:
                    feed[name] = _column(rows, name, dtype)
            feeds[key] = feed
    return _cross_answers(path, feeds)


def _column(rows: list[dict[str, str]], name: str, dtype: Any) -> Any:
    values = [row[name] for row in rows]
    if dtype.name == "string":
        return np.array([v.encode() for v in values], dtype=object)
    numbers = [float(v) for v in values]
    return np.array(numbers, dtype=dtype.as_numpy_dtype)


def _penguin_examples(rows: list[dict[str, str]]) -> Any:
    import tensorflow as tf

    serialized = []
    for row in rows:
        features = {}
        for name, value in row.items():
            if name == "species":
                continue
            try:
                number = float(value)
            except ValueError:
                features[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
                continue
            if name in ("flipper_length_mm", "body_mass_g", "year"):
                features[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(number)]))
            else:
                features[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[number]))
        example = tf.train.Example(features=tf.train.Features(feature=features))
        serialized.append(example.SerializeToString())
    return np.array(serialized, dtype=object)
