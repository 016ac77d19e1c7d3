"""Parse speed of tfship's own message classes against TensorFlow's generated ones.

Both kinds parse the same bytes in one process, interleaved, best of several repeats:

1. a ``saved_model.pb`` (a TF2 Keras export made here with a few dozen layers, or the file given);
2. a ``PredictResponse`` of about 4 MB: one float output of 1M values in ``float_val``, as TF
   Serving writes it, and a small string output.

The ratio is tfship / TensorFlow (below 1.0 is faster); the target is at most 1.1. Each side's
reserialized bytes are compared too, so a fast wrong parse cannot win.

Run: python benchmarks/protos.py [--short] [--repeats N] [--saved-model PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def best_ms(func: Callable[[], Any], repeats: int) -> float:
    """Best wall time of ``func`` in milliseconds (after one warm-up call)."""
    func()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def _saved_model(tf: Any, root: Path, layers: int) -> bytes:
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(16,))] + [tf.keras.layers.Dense(16, activation="relu") for _ in range(layers)]
    )
    tf.saved_model.save(model, str(root / "export"))
    return (root / "export" / "saved_model.pb").read_bytes()


def _predict_response(values: int) -> bytes:
    from tensorflow_serving.apis import predict_pb2

    response = predict_pb2.PredictResponse()
    response.model_spec.name = "penguins"
    response.model_spec.version.value = 1
    scores = response.outputs["scores"]
    scores.dtype = 1
    scores.tensor_shape.dim.add(size=values // 4)
    scores.tensor_shape.dim.add(size=4)
    scores.float_val.extend(float(i % 997) / 997 for i in range(values))
    names = response.outputs["classes"]
    names.dtype = 7
    names.tensor_shape.dim.add(size=4)
    names.string_val.extend([b"adelie", b"chinstrap", b"gentoo", b"other"])
    return bytes(response.SerializeToString())


def _compare(name: str, data: bytes, repeats: int) -> tuple[str, float, float, int, bool]:
    from google.protobuf import descriptor_pool, message_factory

    from tfship._wire._messages import message_class

    ours = message_class(name)
    theirs = message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(name))
    same = ours.FromString(data).SerializeToString(deterministic=True) == theirs.FromString(
        data
    ).SerializeToString(deterministic=True)
    ours_ms = theirs_ms = float("inf")
    for _ in range(5):  # interleaved rounds, so a busy moment hits both sides
        ours_ms = min(ours_ms, best_ms(lambda: ours.FromString(data), repeats))
        theirs_ms = min(theirs_ms, best_ms(lambda: theirs.FromString(data), repeats))
    return name, ours_ms, theirs_ms, len(data), same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="smaller inputs, fewer repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--saved-model", type=Path, help="a saved_model.pb to parse instead")
    args = parser.parse_args()
    repeats = args.repeats or (10 if args.short else 100)

    import tensorflow as tf
    from google.protobuf import __version__
    from google.protobuf.internal import api_implementation
    from tensorflow.core.protobuf import saved_model_pb2

    del saved_model_pb2  # imported for its classes in the default pool
    with tempfile.TemporaryDirectory() as tmp:
        if args.saved_model:
            saved = args.saved_model.read_bytes()
        else:
            saved = _saved_model(tf, Path(tmp), 8 if args.short else 40)
    response = _predict_response(100_000 if args.short else 1_000_000)
    rows = [
        _compare("tensorflow.SavedModel", saved, repeats),
        _compare("tensorflow.serving.PredictResponse", response, repeats),
    ]
    print(f"protobuf {__version__} ({api_implementation.Type()}), best of {repeats} x 5 rounds")
    print(f"{'message':<36}{'bytes':>10}{'tfship (ms)':>13}{'TensorFlow (ms)':>17}{'ratio':>8}  same")
    for name, ours_ms, theirs_ms, size, same in rows:
        print(f"{name:<36}{size:>10}{ours_ms:>13.3f}{theirs_ms:>17.3f}{ours_ms / theirs_ms:>8.2f}  {same}")
    if not all(row[4] for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
