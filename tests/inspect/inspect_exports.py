"""Builders of small real SavedModels of every kind the inspector must read.

Each builder trains (for a handful of steps, on in-memory numpy data) or traces a tiny model and
returns the export directory. They are used by the session fixtures in ``conftest.py`` and by the
benchmark.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np


def _numpy_data(n: int = 32) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    features = {
        "age": rng.uniform(20, 60, size=(n, 1)).astype(np.float32),
        "color": rng.choice(np.array([b"red", b"green", b"blue"]), size=(n, 1)),
    }
    labels = (features["age"][:, 0] > 40).astype(np.int64)
    return features, labels


def _input_fn() -> Any:
    import tensorflow as tf

    features, labels = _numpy_data()
    return tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(8)


def _columns() -> list[Any]:
    import tensorflow as tf

    fc = tf.feature_column
    return [
        fc.numeric_column("age"),
        fc.indicator_column(fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"])),
    ]


def _run_config(model_dir: pathlib.Path) -> Any:
    from tensorflow_estimator import estimator

    return estimator.RunConfig(model_dir=str(model_dir), save_summary_steps=1000, log_step_count_steps=1000)


def _parsing_receiver() -> Any:
    import tensorflow as tf
    from tensorflow_estimator import estimator

    fc = tf.feature_column
    spec = fc.make_parse_example_spec(_columns())
    return estimator.export.build_parsing_serving_input_receiver_fn(spec)


def _raw_receiver() -> Any:
    def receiver() -> Any:
        import tensorflow as tf
        from tensorflow_estimator import estimator

        features = {
            "age": tf.compat.v1.placeholder(tf.float32, [None, 1], name="age"),
            "color": tf.compat.v1.placeholder(tf.string, [None, 1], name="color"),
        }
        return estimator.export.ServingInputReceiver(features, features)

    return receiver


def _export(est: Any, base: pathlib.Path, receiver: Any, **kwargs: Any) -> pathlib.Path:
    out = est.export_saved_model(str(base), receiver, **kwargs)
    return pathlib.Path(out.decode() if isinstance(out, bytes) else out)


def linear_parsing(root: pathlib.Path) -> pathlib.Path:
    """A canned LinearClassifier exported with a parsing receiver (classify/regress/predict)."""
    from tensorflow_estimator import estimator

    est = estimator.LinearClassifier(_columns(), config=_run_config(root / "linear_model"))
    est.train(_input_fn, steps=3)
    return _export(est, root / "linear_parsing", _parsing_receiver())


def linear_text(root: pathlib.Path) -> pathlib.Path:
    """The same kind of canned export written as ``saved_model.pbtxt``."""
    from tensorflow_estimator import estimator

    est = estimator.LinearClassifier(_columns(), config=_run_config(root / "linear_model"))
    est.train(_input_fn, steps=1)
    return _export(est, root / "linear_text", _parsing_receiver(), as_text=True)


def dnn_raw(root: pathlib.Path) -> pathlib.Path:
    """A canned DNNClassifier exported with a raw receiver (placeholders; predict only)."""
    from tensorflow_estimator import estimator

    est = estimator.DNNClassifier(
        hidden_units=[4],
        feature_columns=_columns(),
        n_classes=3,
        config=_run_config(root / "dnn_model"),
    )
    est.train(_input_fn, steps=3)
    return _export(est, root / "dnn_raw", _raw_receiver())


def dnn_both(root: pathlib.Path) -> pathlib.Path:
    """A canned DNNClassifier exported with a parsing receiver plus a raw alternative."""
    from tensorflow_estimator import estimator

    est = estimator.DNNClassifier(
        hidden_units=[4],
        feature_columns=_columns(),
        n_classes=3,
        config=_run_config(root / "dnn_model"),
    )
    est.train(_input_fn, steps=1)

    def receiver() -> Any:
        # Raw placeholders default to the parsed features, so either input path serves.
        import tensorflow as tf

        spec = {
            "age": tf.io.FixedLenFeature([1], tf.float32),
            "color": tf.io.FixedLenFeature([1], tf.string, default_value=[""]),
        }
        parsing = estimator.export.build_parsing_serving_input_receiver_fn(spec)()
        raw = {
            name: tf.compat.v1.placeholder_with_default(tensor, [None, 1], name=f"raw_{name}")
            for name, tensor in parsing.features.items()
        }
        return estimator.export.ServingInputReceiver(
            raw, parsing.receiver_tensors, receiver_tensors_alternatives={"raw": raw}
        )

    return _export(est, root / "dnn_both", receiver)


def _custom_model_fn(features: Any, labels: Any, mode: Any, params: Any) -> Any:
    import tensorflow as tf
    from tensorflow_estimator import estimator as est

    age = features["age"]
    if isinstance(age, tf.SparseTensor):
        age = tf.sparse.to_dense(age)
    age = tf.reshape(tf.cast(age, tf.float32), [-1, 1])
    tags = features["tags"]
    if isinstance(tags, tf.RaggedTensor):
        tags = tags.to_sparse()
    elif not isinstance(tags, tf.SparseTensor):
        tags = tf.sparse.from_dense(tags)
    tag_count = tf.cast(
        tf.sparse.reduce_sum(
            tf.SparseTensor(tags.indices, tf.ones_like(tags.values, tf.float32), tags.dense_shape),
            axis=1,
            keepdims=True,
        ),
        tf.float32,
    )
    tag_count = tf.reshape(tag_count, [-1, 1])
    w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
    logits = tf.matmul(tf.concat([age, tag_count], axis=1), w)
    predictions = {"score": tf.sigmoid(logits), "tag_count": tag_count}
    if mode == est.ModeKeys.PREDICT:
        return est.EstimatorSpec(
            mode,
            predictions=predictions,
            export_outputs={
                "serving_default": est.export.PredictOutput(predictions),
                "score_only": est.export.RegressionOutput(value=tf.reshape(logits, [-1])),
            },
        )
    loss = tf.reduce_mean(tf.square(logits - tf.cast(tf.reshape(labels, [-1, 1]), tf.float32)))
    step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=predictions)


def _custom_train_input() -> Any:
    import tensorflow as tf

    n = 8
    age = tf.constant(np.arange(n, dtype=np.float32).reshape(n, 1))
    tags = tf.sparse.from_dense(tf.constant([[b"a", b""]] * n))
    labels = tf.constant(np.zeros((n, 1), np.float32))
    return {"age": age, "tags": tags}, labels


def custom_sparse(root: pathlib.Path) -> pathlib.Path:
    """A custom Estimator whose parsing receiver has a VarLen (sparse) and a ragged feature,
    and whose raw alternative takes a SparseTensor (a ``coo_sparse`` input)."""
    from tensorflow_estimator import estimator

    est = estimator.Estimator(_custom_model_fn, config=_run_config(root / "custom_model"))
    est.train(_custom_train_input, steps=2)

    def receiver() -> Any:
        import tensorflow as tf

        spec = {
            "age": tf.io.FixedLenFeature([1], tf.float32, default_value=[30.0]),
            "tags": tf.io.VarLenFeature(tf.string),
            "ids": tf.io.RaggedFeature(tf.int64),
            "pos": tf.io.FixedLenFeature([2], tf.int64, default_value=[0, 1]),
        }
        serialized = tf.compat.v1.placeholder(tf.string, [None], name="input_example_tensor")
        features = tf.io.parse_example(serialized, spec)
        features.pop("ids")
        features.pop("pos")
        # Raw alternatives default to the parsed tensors, so either input path serves.
        tags = features["tags"]
        raw_tags = tf.SparseTensor(
            tf.compat.v1.placeholder_with_default(tags.indices, [None, 2], name="raw_tags_i"),
            tf.compat.v1.placeholder_with_default(tags.values, [None], name="raw_tags_v"),
            tf.compat.v1.placeholder_with_default(tags.dense_shape, [2], name="raw_tags_s"),
        )
        raw_age = tf.compat.v1.placeholder_with_default(features["age"], [None, 1], name="raw_age")
        raw = {"age": raw_age, "tags": raw_tags}
        return estimator.export.ServingInputReceiver(
            raw, {"examples": serialized}, receiver_tensors_alternatives={"sparse": raw}
        )

    return _export(est, root / "custom_sparse", receiver)


def multi_tag(root: pathlib.Path) -> pathlib.Path:
    """A custom Estimator exported for train, eval and serve (three MetaGraphs)."""
    import tensorflow as tf
    from tensorflow_estimator import estimator

    est = estimator.Estimator(_custom_model_fn, config=_run_config(root / "custom_model"))
    est.train(_custom_train_input, steps=1)

    def supervised() -> Any:
        age = tf.compat.v1.placeholder(tf.float32, [None, 1], name="age")
        tags = tf.compat.v1.placeholder(tf.string, [None, 2], name="tags")
        label = tf.compat.v1.placeholder(tf.float32, [None, 1], name="label")
        build = estimator.experimental.build_raw_supervised_input_receiver_fn
        return build({"age": age, "tags": tags}, label)()

    def serving() -> Any:
        age = tf.compat.v1.placeholder(tf.float32, [None, 1], name="age")
        tags = tf.compat.v1.sparse_placeholder(tf.string, [None, None], name="tags")
        return estimator.export.ServingInputReceiver({"age": age, "tags": tags}, {"age": age, "tags": tags})

    modes = estimator.ModeKeys
    out = est.experimental_export_all_saved_models(
        str(root / "multi_tag"),
        {modes.TRAIN: supervised, modes.EVAL: supervised, modes.PREDICT: serving},
    )
    return pathlib.Path(out.decode() if isinstance(out, bytes) else out)


def tf2_module(root: pathlib.Path) -> pathlib.Path:
    """A ``tf.Module`` saved with ``tf.saved_model.save`` (signatures and concrete functions)."""
    import tensorflow as tf

    class Scale(tf.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable([[1.0], [2.0], [3.0]], name="w")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def __call__(self, x: Any) -> Any:
            return {"y": tf.matmul(x, self.w)}

        @tf.function
        def scaled(self, x: Any, factor: Any = 2.0, flag: bool = False) -> Any:
            return tf.matmul(x, self.w) * factor

    module = Scale()
    module.scaled.get_concrete_function(tf.TensorSpec([None, 3], tf.float32))
    module.scaled.get_concrete_function(tf.TensorSpec([4, 3], tf.float32, name="fixed"), 3.0, True)
    path = root / "tf2_module" / "1"
    tf.saved_model.save(
        module,
        str(path),
        signatures={
            "serving_default": module.__call__,
            "scaled": module.scaled.get_concrete_function(tf.TensorSpec([None, 3], tf.float32)),
        },
    )
    return path


def keras_model(root: pathlib.Path) -> pathlib.Path:
    """A small functional Keras model saved for serving as its Keras does: Keras 2 with
    ``tf.saved_model.save``, Keras 3 (TensorFlow 2.16 and later) with ``model.export``, which
    names the signature's inputs after the model's (``tf.saved_model.save`` of a Keras 3 model
    calls them ``inputs``, ``inputs_1``)."""
    from importlib.metadata import version

    import tensorflow as tf

    inputs = {
        "a": tf.keras.Input(shape=(2,), name="a"),
        "b": tf.keras.Input(shape=(1,), name="b", dtype="int64"),
    }
    x = tf.keras.layers.Concatenate()(
        [inputs["a"], tf.keras.layers.Lambda(lambda v: tf.cast(v, tf.float32))(inputs["b"])]
    )
    out = tf.keras.layers.Dense(2, name="probs", activation="softmax")(x)
    model = tf.keras.Model(inputs, out)
    path = root / "keras" / "1"
    if int(version("keras").split(".")[0]) >= 3:
        model.export(str(path), format="tf_saved_model", verbose=False)
    else:
        tf.saved_model.save(model, str(path))
    return path


def tf2_composite(root: pathlib.Path) -> pathlib.Path:
    """A ``tf.Module`` with ragged and sparse inputs, Python-valued arguments, a loop and a
    branch (functions calling functions), saved with ``tf.saved_model.save``."""
    import tensorflow as tf

    class Composite(tf.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.v = tf.Variable(2.0)

        @tf.function(
            input_signature=[
                tf.RaggedTensorSpec([None, None], tf.float32),
                tf.SparseTensorSpec([None, 4], tf.int64),
            ]
        )
        def f(self, r: Any, s: Any) -> Any:
            return {"r": tf.reduce_sum(r, axis=1) * self.v, "s": tf.sparse.reduce_sum(s, axis=1)}

        @tf.function
        def g(self, x: Any, opts: Any = None, lst: Any = (1, 2)) -> Any:
            return x * 2.0

        @tf.function
        def loop(self, x: Any) -> Any:
            i = tf.constant(0)
            while i < 3:
                x = x + 1.0
                i += 1
            if tf.reduce_sum(x) > 0:
                x = x * 2.0
            return x

    m = Composite()
    m.g.get_concrete_function(tf.TensorSpec([None], tf.float32), {"a": 1, "b": "z"}, [1, 2])
    m.g.get_concrete_function(tf.TensorSpec([2], tf.float32), {"a": 2, "b": "y"}, [3])
    loop = m.loop.get_concrete_function(tf.TensorSpec([None], tf.float32))
    path = root / "tf2_composite" / "1"
    tf.saved_model.save(m, str(path), signatures={"serving_default": m.f, "loop": loop})
    return path


def keras_sequential(root: pathlib.Path) -> pathlib.Path:
    """A Keras Sequential model with batch norm and dropout (training-dependent calls)."""
    import tensorflow as tf

    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            layers.Dense(8, activation="relu", input_shape=(5,)),
            layers.BatchNormalization(),
            layers.Dropout(0.2),
            layers.Dense(1),
        ]
    )
    path = root / "keras_seq" / "1"
    tf.saved_model.save(model, str(path))
    return path


def tfship_export(root: pathlib.Path) -> pathlib.Path:
    """A LinearClassifier exported by ``tfship.exporters.export_model`` with both receivers, a
    warmup record and the exporter's metadata."""
    import tensorflow as tf
    from tensorflow_estimator import estimator

    from tfship.exporters import both_receiver, export_model

    est = estimator.LinearClassifier(_columns(), config=_run_config(root / "model"))
    est.train(_input_fn, steps=2)
    spec: dict[str, Any] = {
        "age": tf.io.FixedLenFeature([1], tf.float32, default_value=[40.0]),
        "color": tf.io.VarLenFeature(tf.string),
    }
    example = tf.train.Example()
    example.features.feature["age"].float_list.value.append(33.0)
    example.features.feature["color"].bytes_list.value.append(b"red")
    result = export_model(
        est,
        root / "export" / "linear",
        both_receiver(spec),
        warmup=[example],
        eval_result={"accuracy": 0.75},
        exporter={"name": "final"},
    )
    return pathlib.Path(result.path)


BUILDERS = {
    "linear_parsing": linear_parsing,
    "linear_text": linear_text,
    "dnn_raw": dnn_raw,
    "dnn_both": dnn_both,
    "custom_sparse": custom_sparse,
    "multi_tag": multi_tag,
    "tf2_module": tf2_module,
    "keras": keras_model,
    "tf2_composite": tf2_composite,
    "keras_seq": keras_sequential,
}
# Built with tf.estimator: on the run lane, by the estimator lane's Python (estimator_lane.build).
ESTIMATORS = frozenset({"linear_parsing", "linear_text", "dnn_raw", "dnn_both", "custom_sparse", "multi_tag"})
