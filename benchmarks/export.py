"""Wall time of tfship's export against tf.estimator's export_saved_model, same checkpoint.

Trains one small canned classifier, then exports its checkpoint repeatedly with
``Estimator.export_saved_model`` (parsing receiver) and with ``tfship.exporters.export_model``
(same receiver), without and with verification (load back, check signatures, replay warmup).
Prints the median times and the ratios to tf.estimator, all measured in this one run.

Usage: python benchmarks/export.py [--repeats N] [--short] (``--short``: one timed run of each
case, 10 warmup records instead of 100)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tfship._tf import estimator, tf


def _spec() -> dict[str, Any]:
    t = tf()
    spec = {f"x{i}": t.io.FixedLenFeature([], t.float32, default_value=0.0) for i in range(8)}
    spec["color"] = t.io.FixedLenFeature([], t.string, default_value="")
    spec["tags"] = t.io.VarLenFeature(t.string)
    return spec


def _columns() -> list[Any]:
    fc = tf().feature_column
    cols: list[Any] = [fc.numeric_column(f"x{i}") for i in range(8)]
    cols.append(fc.indicator_column(fc.categorical_column_with_vocabulary_list("color", ["r", "g"])))
    cols.append(fc.embedding_column(fc.categorical_column_with_hash_bucket("tags", 100), 8))
    return cols


def _input_fn() -> Any:
    t = tf()
    rng = np.random.default_rng(0)
    n = 128
    feats: dict[str, Any] = {f"x{i}": rng.normal(size=n).astype("float32") for i in range(8)}
    feats["color"] = np.array([b"r", b"g"])[rng.integers(0, 2, n)]
    feats["tags"] = t.sparse.SparseTensor([[i, 0] for i in range(n)], [b"a"] * n, [n, 1])
    label = (feats["x0"] > 0).astype("int64")
    return t.data.Dataset.from_tensors((feats, label)).repeat()


def _examples(n: int) -> list[Any]:
    t = tf()
    out = []
    for i in range(n):
        feats = {f"x{j}": t.train.Feature(float_list=t.train.FloatList(value=[i * 0.1])) for j in range(8)}
        feats["color"] = t.train.Feature(bytes_list=t.train.BytesList(value=[b"r"]))
        out.append(t.train.Example(features=t.train.Features(feature=feats)))
    return out


def _interleaved_medians(cases: list[tuple[str, Callable[[], Any]]], repeats: int) -> list[float]:
    # Round-robin over the cases so that load from other processes hits them all alike.
    for _, fn in cases:
        fn()  # warm up: the first graph construction pays one-off tracing costs
    times: list[list[float]] = [[] for _ in cases]
    for _ in range(repeats):
        for i, (_, fn) in enumerate(cases):
            started = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="timed runs of each case (default 7)")
    parser.add_argument("--short", action="store_true", help="one timed run per case, 10 warmup records")
    args = parser.parse_args()
    if args.repeats is None:
        args.repeats = 1 if args.short else 7
    records = 10 if args.short else 100
    from tfship.exporters import export_model, parsing_receiver

    est_mod = estimator()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        est = est_mod.DNNClassifier(
            hidden_units=[64, 32], feature_columns=_columns(), model_dir=str(root / "m")
        )
        est.train(_input_fn, steps=20)
        ckpt = est.latest_checkpoint()
        theirs_fn = est_mod.export.build_parsing_serving_input_receiver_fn(_spec())
        ours = parsing_receiver(_spec())
        warmup = _examples(records)
        n = {"i": 0}

        def base(name: str) -> str:
            # A fresh base per export: tf.estimator sleeps 1 s when a timestamp repeats.
            n["i"] += 1
            return str(root / f"{name}-{n['i']}")

        cases: list[tuple[str, Callable[[], Any]]] = [
            (
                "tf.estimator export_saved_model",
                lambda: est.export_saved_model(base("tf"), theirs_fn, checkpoint_path=ckpt),
            ),
            (
                "tfship export_model, no verification",
                lambda: export_model(est, base("nv"), ours, checkpoint_path=ckpt, verify=False),
            ),
            (
                "tfship export_model, verified",
                lambda: export_model(est, base("v"), ours, checkpoint_path=ckpt),
            ),
            (
                f"tfship export_model, verified + {records} warmup",
                lambda: export_model(est, base("w"), ours, checkpoint_path=ckpt, warmup=warmup),
            ),
        ]
        medians = _interleaved_medians(cases, args.repeats)
        results = [(label, m) for (label, _), m in zip(cases, medians)]
    reference = results[0][1]
    print(
        f"export of one checkpoint, median of {args.repeats} interleaved runs (TensorFlow {tf().__version__})"
    )
    print(f"{'case':<44} {'seconds':>8} {'ratio':>7}")
    for label, seconds in results:
        print(f"{label:<44} {seconds:>8.3f} {seconds / reference:>6.2f}x")


if __name__ == "__main__":
    main()
