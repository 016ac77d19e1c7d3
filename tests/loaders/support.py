"""Helpers of the loader tests: rows, their feature tensors, and the models' own predictions."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

COLORS = ["red", "green", "blue"]
ROWS = 48


@dataclass
class EstimatorExports:
    """A DNNClassifier trained a few steps by TensorFlow 2.15 (``estimator_builds.loader_exports``),
    its exports, and its ``estimator.predict`` on the rows the tests compare with."""

    parsing: Path
    raw: Path
    scalar: Path
    predictions: Path


def make_rows(n: int, seed: int) -> dict[str, Any]:
    """n rows: numeric ``x``, fixed-length ``v2`` [2], categorical ``color``, var-length ``tags``."""
    rng = np.random.default_rng(seed)
    tags = [[f"t{j}" for j in rng.integers(0, 6, size=rng.integers(0, 4))] for _ in range(n)]
    return {
        "x": rng.normal(size=n).astype(np.float32),
        "v2": rng.normal(size=(n, 2)).astype(np.float32),
        "color": rng.choice(COLORS, size=n).astype(object),
        "tags": tags,
    }


def records_of(rows: dict[str, Any]) -> list[dict[str, Any]]:
    """The same rows as record dicts (Python types, as JSON would give them)."""
    n = len(rows["x"])
    return [
        {
            "x": float(rows["x"][i]),
            "v2": [float(v) for v in rows["v2"][i]],
            "color": str(rows["color"][i]),
            "tags": list(rows["tags"][i]),
        }
        for i in range(n)
    ]


def _sparse_tags(tf: Any, tags: list[list[str]]) -> Any:
    indices = [[i, j] for i, row in enumerate(tags) for j in range(len(row))]
    values = [v for row in tags for v in row]
    width = max((len(r) for r in tags), default=0)
    return tf.sparse.SparseTensor(
        tf.constant(indices, tf.int64, shape=[len(indices), 2]),
        tf.constant(values, tf.string, shape=[len(values)]),
        [len(tags), width],
    )


def features_fn(tf: Any, rows: dict[str, Any]) -> dict[str, Any]:
    """The feature tensors an input_fn yields for ``rows`` (categoricals as the parser does)."""
    color = [[c] for c in rows["color"]]
    return {
        "x": tf.constant(rows["x"]),
        "v2": tf.constant(rows["v2"]),
        "color": _sparse_tags(tf, color),
        "tags": _sparse_tags(tf, rows["tags"]),
    }


def rows_key(rows: dict[str, Any]) -> str:
    """A name for ``rows`` by their content: the key of their predictions."""
    digest = hashlib.sha256(np.ascontiguousarray(rows["x"], np.float32).tobytes()).hexdigest()
    return f"n{len(rows['x'])}_{digest[:16]}"


def _as_estimator_gave(array: Any) -> Any:
    return array.astype(object) if array.dtype.kind == "S" else array  # bytes come as objects


def estimator_predictions(exports: EstimatorExports, rows: dict[str, Any]) -> dict[str, Any]:
    """``estimator.predict`` on ``rows``, stacked per key, as TensorFlow 2.15 computed it when it
    built the exports (rows of ``estimator_builds.PREDICTED_ROWS`` only)."""
    key = rows_key(rows)
    with np.load(exports.predictions) as stored:
        found = {
            name.split("__", 1)[1]: _as_estimator_gave(stored[name])
            for name in stored.files
            if name.startswith(key + "__")
        }
    if not found:
        raise KeyError("no estimator.predict of these rows: add them to estimator_builds.PREDICTED_ROWS")
    return found


@dataclass
class KerasExport:
    """A small Keras functional model saved with ``tf.saved_model.save``, and its weights.

    ``reference`` recomputes the model in numpy: calling the Keras object itself after an
    Estimator has built graphs in the same process is not allowed by Keras 2.15.
    """

    weights: list[Any]
    path: Path

    def reference(self, a: Any, b: Any) -> Any:
        w1, b1, w2, b2 = self.weights
        hidden = np.maximum(np.asarray(a, np.float32) @ w1 + b1, 0.0)
        hidden = hidden + np.asarray(b, np.float32)[:, None]
        return hidden @ w2 + b2


@dataclass
class ModuleExport:
    """A ``tf.Module`` whose signature takes a dense ``x`` [n, 3] and a SparseTensor ``s``."""

    path: Path

    @staticmethod
    def reference(x: Any, s: list[list[int]]) -> Any:
        return np.asarray(x, np.float32).sum(1) + np.array([sum(r) for r in s], np.float32)
