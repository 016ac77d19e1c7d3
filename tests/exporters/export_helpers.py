"""Data, feature columns and a tiny canned classifier shared by the exporter tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

N = 64
#: How export_model names a version while it is being built: a hidden, non-numeric sibling
#: (so TF Serving never takes it for a version), swept when its process is gone.
STAGING_PREFIX = ".tfship-staging-"


def parse_spec() -> dict[str, Any]:
    import tensorflow as tf

    return {
        "x": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
        "color": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "tags": tf.io.VarLenFeature(tf.string),
    }


def feature_columns() -> list[Any]:
    import tensorflow as tf

    fc = tf.feature_column
    return [
        fc.numeric_column("x"),
        fc.indicator_column(fc.categorical_column_with_vocabulary_list("color", ["r", "g", "b"])),
        fc.embedding_column(fc.categorical_column_with_hash_bucket("tags", 16), 2),
    ]


def data(n: int = N, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).astype("float32")
    color = np.array([b"r", b"g", b"b"])[rng.integers(0, 3, n)]
    tags = [[b"a", b"c"] if v > 0 else [b"b"] for v in x]
    return {"x": x, "color": color, "tags": tags, "label": (x > 0).astype("int64")}


def sparse_tags(tags: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    indices = [[i, j] for i, row in enumerate(tags) for j in range(len(row))]
    values = [v for row in tags for v in row]
    shape = [len(tags), max(len(r) for r in tags)]
    return (
        np.array(indices, dtype=np.int64),
        np.array(values, dtype=object),
        np.array(shape, dtype=np.int64),
    )


def input_fn() -> Any:
    import tensorflow as tf

    d = data()
    idx, vals, shape = sparse_tags(d["tags"])
    tags = tf.sparse.SparseTensor(idx, vals.astype(bytes), shape)
    features = {"x": d["x"], "color": d["color"], "tags": tags}
    return tf.data.Dataset.from_tensors((features, d["label"])).repeat()


def examples(n: int = 8, seed: int = 1) -> list[Any]:
    import tensorflow as tf

    d = data(n, seed)
    out = []
    for i in range(n):
        feats = {
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(d["x"][i])])),
            "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[d["color"][i]])),
            "tags": tf.train.Feature(bytes_list=tf.train.BytesList(value=d["tags"][i])),
        }
        out.append(tf.train.Example(features=tf.train.Features(feature=feats)))
    return out


def make_classifier(model_dir: Path) -> Any:
    from tensorflow_estimator import estimator as est

    return est.DNNClassifier(
        hidden_units=[4],
        feature_columns=feature_columns(),
        model_dir=str(model_dir),
        config=est.RunConfig(save_checkpoints_steps=5, tf_random_seed=1),
    )


def numeric_dirs(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.name.isdigit()) if base.exists() else []


def run_signature(path: Path, key: str, feeds: dict[str, Any]) -> dict[str, Any]:
    """Load a SavedModel in a fresh session and run one signature, as TF Serving would."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        mg = v1.saved_model.loader.load(sess, ["serve"], str(path))
        sig = mg.signature_def[key]
        feed_dict: dict[str, Any] = {}
        for name, value in feeds.items():
            info = sig.inputs[name]
            if info.HasField("coo_sparse"):
                c = info.coo_sparse
                names = (c.indices_tensor_name, c.values_tensor_name, c.dense_shape_tensor_name)
                feed_dict.update(zip(names, value))
            else:
                feed_dict[info.name] = value
        fetches = {k: v.name for k, v in sig.outputs.items()}
        return dict(sess.run(fetches, feed_dict=feed_dict))


def saved_signatures(path: Path) -> dict[str, Any]:
    """Signature key -> SignatureDef, read from saved_model.pb without loading the model."""
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString((path / "saved_model.pb").read_bytes())
    return dict(sm.meta_graphs[0].signature_def)


def tree(path: Path) -> list[str]:
    """Relative file paths under ``path``, sorted."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
