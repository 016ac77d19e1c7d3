"""Wall time of short ``tfship`` commands, each a fresh process, as a user types them.

Rows: ``tfship --help``, ``tfship inspect show EXPORT``, ``tfship client status`` over gRPC
and over REST, and ``tfship client predict`` over gRPC (which reads the signature first),
against a local ``tfship.server.ModelServer`` serving a small SavedModel. Each
command runs several times, interleaved; the table gives the median and best wall time, the
ratio of each row to ``tfship --help`` (the cost of starting Python and click), and whether the
command imported TensorFlow (``python -X importtime`` lists it).

Target: ``tfship client status`` over gRPC under 1 s (it must not import TensorFlow).

Run: python benchmarks/cli.py [--reps N] [--short] (``--short``: one run of each command, the
target not judged)
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
TARGET_S = 1.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}  # loopback only
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _export(root: pathlib.Path) -> pathlib.Path:
    """A one-input SavedModel (``y = x @ w``) as version 1 under ``root/m``."""
    from tfship._tf import tf as import_tf

    tf = import_tf()

    class Model(tf.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable([[1.0], [2.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            return {"y": tf.matmul(x, self.w)}

    model = Model()
    base = root / "m"
    tf.saved_model.save(model, str(base / "1"), signatures={"serving_default": model.serve})
    return base


def _run(args: list[str], *flags: str) -> tuple[float, str]:
    """Seconds of one ``python [FLAGS] -m tfship ARGS`` run, and its stderr."""
    cmd = [sys.executable, *flags, "-m", "tfship", *args]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=120)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.splitlines()[-1:]}")
    return elapsed, done.stderr


def _imports_tensorflow(args: list[str]) -> bool:
    """Whether the command imports TensorFlow (``-X importtime`` lists every import)."""
    _, stderr = _run(args, "-X", "importtime")
    return any(line.rstrip().endswith("| tensorflow") for line in stderr.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help="runs of each command (default 5)")
    parser.add_argument("--short", action="store_true", help="one run of each command, no target")
    args = parser.parse_args()
    reps = args.reps if args.reps is not None else 1 if args.short else 5
    from tfship.server import ModelServer, ServerOptions

    with tempfile.TemporaryDirectory() as tmp:
        base = _export(pathlib.Path(tmp))
        with ModelServer.from_base_path(base, "m", options=ServerOptions(port=0, rest_port=0)) as server:
            server.wait_until_available("m", timeout=60)
            commands = {
                "tfship --help": ["--help"],
                "tfship inspect show EXPORT": ["inspect", "show", str(base / "1")],
                "tfship client status (gRPC)": ["client", "status", "-s", server.address, "-m", "m"],
                "tfship client status (REST)": [
                    "client",
                    "status",
                    "--rest",
                    "-s",
                    str(server.rest_url),
                    "-m",
                    "m",
                ],
                # predict reads the signature first (GetModelMetadata) to check the inputs
                "tfship client predict (gRPC)": [
                    "client",
                    "predict",
                    "-s",
                    server.address,
                    "-m",
                    "m",
                    "-d",
                    '{"x": [[1.0, 2.0]]}',
                ],
            }
            loads_tf = {name: _imports_tensorflow(argv) for name, argv in commands.items()}
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(reps):
                for name, argv in commands.items():
                    times[name].append(_run(argv)[0])
    _report(times, loads_tf, judge=not args.short)


def _report(times: dict[str, list[float]], loads_tf: dict[str, bool], judge: bool) -> None:
    width = max(len(name) for name in times)
    base = statistics.median(times["tfship --help"])
    print(f"{'command':<{width}}  {'median s':>8}  {'best s':>7}  {'x --help':>8}  imports TF")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<{width}}  {median:>8.3f}  {min(values):>7.3f}  {median / base:>7.1f}x  "
            f"{'yes' if loads_tf[name] else 'no'}"
        )
    grpc_median = statistics.median(times["tfship client status (gRPC)"])
    verdict = ("met" if grpc_median < TARGET_S else "NOT met") if judge else "not judged (--short)"
    print(f"target: client status over gRPC < {TARGET_S:g} s: {verdict} ({grpc_median:.3f} s)")


if __name__ == "__main__":
    main()
