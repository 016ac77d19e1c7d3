"""The newest TensorFlow against TF 2.15: one Estimator export run by both install lanes.

tfship installs in two lanes: ``.venv`` (``tfship[estimator]``: TensorFlow 2.15, which trains and
exports) and ``.venv-run`` (``tfship[run]``: the newest TensorFlow, Keras 3, numpy 2, today's
protobuf, which only runs models). This script trains one small dnn on the bundled penguins with
the 2.15 lane (``tfship train``) and, on that one export, measures both lanes side by side in one
run, in turns (2.15 then newest, newest then 2.15, ...: the order flips each turn, so a load
that moves during the run falls on both), each measurement repeated:

- ``tfship predict`` CSV -> CSV of a synthetic file (``tfship data synth``) through the
  ``predict`` signature, as a fresh process of each lane's ``tfship``: the job's time its
  ``--json`` summary reports (reading, conversion, the model, writing), the wall time (import,
  load, job) and the peak RSS;
- ``tfship serve`` of each lane: Predict requests/s at batch 1 (one serialized ``tf.Example``,
  all the signature's outputs) over gRPC with 1 and 8 clients; the clients are plain gRPC in
  this process sending the same request bytes to both servers, so the server is what differs;
- the two floors of ``benchmarks/serving.py``, started on each lane's Python: the one that runs
  the same signature on the same Example through ``LocalModel.checked_runner`` before a constant
  reply (what TensorFlow's own run costs a server on that lane), and the transport floor that
  only returns the reply (what gRPC and protobuf cost).

Each figure is the median of the turns with their range; each ratio is newest / 2.15 of
rows/s or requests/s (above 1.00x the newest TensorFlow is faster), the median of the ratios of
the turns measured next to each other, with their range. Nothing is judged: it is a report.
The servers and floors start (and load) before the ``tfship predict`` turns and sit idle
through them.

Usage: ``python benchmarks/lanes.py [--rows N] [--seconds S] [--repeats N] [--steps N]
[--run-python PATH] [--short]``, run by ``.venv``'s Python; ``--run-python`` is the newest
lane's (default ``.venv-run/bin/python`` of this checkout, which ``make test-run`` builds).
Defaults: 300,000 rows, 2 s per serving measurement, 4 turns, 100 training steps; ``--short``
runs every row on 2,000 rows, 0.2 s per measurement, 2 turns, 5 steps, with the servers
starting while ``tfship predict`` runs, to see that each path runs.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import serving  # benchmarks/serving.py: its floors and its rate()

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = (1, 8)
MODEL_NAME = "lanes"
SIGNATURE = "predict"
BATCH = 1024
VERSIONS = ("tensorflow", "keras", "numpy", "protobuf", "grpcio")


def lane_versions(python: Path) -> dict[str, str]:
    """Python's version and the packages' versions a lane has, read from its metadata."""
    code = (
        "import importlib.metadata as m, json, platform\n"
        f"names = {list(VERSIONS)!r}\n"
        "print(json.dumps({'python': platform.python_version(),"
        " **{n: m.version(n) for n in names}}))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    found: dict[str, str] = json.loads(done.stdout)
    return found


def command(tfship: Path, *args: str) -> str:
    """Run ``tfship args...``; its stdout, or exit with the end of its stderr."""
    done = subprocess.run([str(tfship), *args], capture_output=True, text=True, env=clean_env())
    if done.returncode != 0:
        raise SystemExit(f"error: tfship {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def clean_env() -> dict[str, str]:
    # gRPC honours proxy variables, even for 127.0.0.1
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def setup(workdir: Path, tfship: Path, rows: int, steps: int) -> tuple[Path, Path, Path]:
    """The schema, the export base (one version) and a synthetic CSV of ``rows`` rows."""
    data = workdir / "data"
    command(tfship, "data", "penguins", "-o", str(data))
    schema = workdir / "schema.json"
    command(tfship, "schema", "infer", str(data / "train.csv"), "--label", "species", "-o", str(schema))
    print(f"training the dnn for {steps} steps with {tfship} ...", file=sys.stderr)
    model_dir = workdir / "model"
    command(
        tfship,
        "train",
        "--schema",
        str(schema),
        "--train",
        str(data / "train.csv"),
        "--eval",
        str(data / "eval.csv"),
        "--model-dir",
        str(model_dir),
        "--max-steps",
        str(steps),
        "--checkpoint-every",
        str(steps),
        "--export",
        "final",
        "--receiver",
        "parsing",
        "--json",
    )
    csv_path = workdir / f"synth-{rows}.csv"
    command(tfship, "data", "synth", "--schema", str(schema), "--rows", str(rows), "-o", str(csv_path))
    return schema, model_dir / "export" / "final", csv_path


# tfship predict -------------------------------------------------------------------------------
def time_predict(tfship: Path, export: Path, csv_path: Path, out: Path) -> dict[str, float]:
    """One ``tfship predict --json`` as a fresh process: job and wall seconds, peak RSS (MB)."""
    args = [
        str(tfship),
        "predict",
        str(export),
        "-i",
        str(csv_path),
        "-o",
        str(out),
        "-s",
        SIGNATURE,
        "--batch-size",
        str(BATCH),
        "--json",
    ]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=errors, env=clean_env())
        assert child.stdout is not None
        output = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"error: {' '.join(args)} failed: {errors.read().decode()[-2000:]}")
    summary = json.loads(output)
    if summary["rejected"]:
        raise SystemExit(f"error: {tfship} predict rejected {summary['rejected']} rows")
    return {"job": summary["seconds"], "wall": wall, "rss": usage.ru_maxrss / 1024}


def predict_turns(
    lanes: dict[str, Path], export: Path, csv_path: Path, workdir: Path, repeats: int
) -> dict[str, list[dict[str, float]]]:
    """Each lane's ``tfship predict`` in turns, ``repeats`` times."""
    runs: dict[str, list[dict[str, float]]] = {lane: [] for lane in lanes}
    for turn in range(repeats):
        for lane in in_turn(list(lanes), turn):
            tfship = lanes[lane]
            print(f"tfship predict, {lane}, turn {turn + 1} of {repeats} ...", file=sys.stderr)
            runs[lane].append(time_predict(tfship, export, csv_path, workdir / f"out-{lane}.csv"))
    return runs


def in_turn(lanes: list[str], turn: int) -> list[str]:
    """The lanes in the order of this turn: as given, then reversed, and so on."""
    return lanes if turn % 2 == 0 else lanes[::-1]


# tfship serve and the floors ------------------------------------------------------------------
def predict_request(schema_path: Path, csv_path: Path) -> bytes:
    """A Predict request of the first synthetic row as one serialized Example, every output."""
    from tfship._wire import encode_tensor, protos
    from tfship.records import BySchema, to_example
    from tfship.schema import CsvMissing, Schema

    with csv_path.open(newline="") as rows:
        row = next(csv.DictReader(rows))
    example = to_example(row, BySchema(Schema.load(schema_path), csv=CsvMissing()))
    request = protos().predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = MODEL_NAME, SIGNATURE
    request.inputs["examples"].CopyFrom(encode_tensor(np.array([example.SerializeToString()], dtype=object)))
    data: bytes = request.SerializeToString()
    return data


def start(args: Sequence[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=clean_env()
    )


def address_of(side: str, process: subprocess.Popen[str]) -> str:
    """The gRPC address a server or a floor announces on its first line."""
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise SystemExit(f"error: {side} did not start (exit {process.wait()})")
    if line.lstrip().startswith("{"):
        return str(json.loads(line)["grpc"])
    return f"127.0.0.1:{int(line)}"


def start_sides(
    pythons: dict[str, Path], export: Path, request_file: Path
) -> dict[tuple[str, str], subprocess.Popen[str]]:
    """Per lane: ``tfship serve``, the floor running the model and the transport floor, all
    started at once, by (side, lane)."""
    version = next(path for path in sorted(export.iterdir()) if path.name.isdigit())
    floor = [str(Path(serving.__file__).resolve()), "--constant-reply-server", "small"]
    processes: dict[tuple[str, str], subprocess.Popen[str]] = {}
    for lane, python in pythons.items():
        processes["serve", lane] = start(
            [
                str(python.parent / "tfship"),
                "serve",
                "--model-base-path",
                str(export),
                "--model-name",
                MODEL_NAME,
                "--port",
                "0",
                "--poll-seconds",
                "0",
                "--json",
            ]
        )
        processes["model", lane] = start(
            [str(python), *floor, "--model", str(version), "--request", str(request_file)]
        )
        processes["floor", lane] = start([str(python), *floor])
    return processes


def ready(
    processes: dict[tuple[str, str], subprocess.Popen[str]], request: bytes
) -> tuple[dict[tuple[str, str], str], bool]:
    """Every side's address once it answers, and whether both servers give the same answer."""
    addresses = {key: address_of(f"{key[0]} on {key[1]}", process) for key, process in processes.items()}
    channels: list[Any] = []
    try:
        answers = [
            served_probabilities(address, request, channels)
            for (side, _), address in addresses.items()
            if side == "serve"
        ]
    finally:
        for channel in channels:
            channel.close()
    return addresses, bool(np.allclose(answers[0], answers[1], atol=1e-5))


def stop(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def raw_predict(address: str, channels: list[Any]) -> Callable[[bytes], bytes]:
    """Predict over a channel of its own, request and reply as bytes."""
    import grpc

    channel = grpc.insecure_channel(address)
    channels.append(channel)
    call: Callable[..., bytes] = channel.unary_unary(
        "/tensorflow.serving.PredictionService/Predict",
        request_serializer=None,
        response_deserializer=None,
    )
    return lambda request: call(request, timeout=30)


def served_probabilities(address: str, request: bytes, channels: list[Any]) -> np.ndarray[Any, Any]:
    """The probabilities a server answers, waiting for its model to be ready (up to 2 minutes)."""
    import grpc

    from tfship._wire import decode_predict_response

    call = raw_predict(address, channels)
    deadline = time.monotonic() + 120
    while True:
        try:
            reply = call(request)
            break
        except grpc.RpcError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    outputs = decode_predict_response(reply).outputs
    return np.asarray(outputs["probabilities"])


def serving_turns(
    addresses: dict[tuple[str, str], str],
    lanes: Sequence[str],
    request: bytes,
    seconds: float,
    repeats: int,
) -> dict[tuple[str, str, int], list[float]]:
    """Requests/s of every (side, lane) per client count, in turns, ``repeats`` times."""
    channels: list[Any] = []
    rates: dict[tuple[str, str, int], list[float]] = {}

    def make_call(address: str) -> Callable[[], Callable[[], None]]:
        def make() -> Callable[[], None]:
            call = raw_predict(address, channels)

            def predict() -> None:
                call(request)

            return predict

        return make

    try:
        for turn in range(repeats):
            print(f"serving, turn {turn + 1} of {repeats} ...", file=sys.stderr)
            for n in CLIENTS:
                for side in ("serve", "model", "floor"):
                    for lane in in_turn(list(lanes), turn):
                        rate = serving.rate(n, seconds, make_call(addresses[side, lane]))
                        rates.setdefault((side, lane, n), []).append(rate)
        return rates
    finally:
        for channel in channels:
            channel.close()


# printing -------------------------------------------------------------------------------------
def spread(values: Sequence[float], fmt: str) -> str:
    """The median with the range: ``1.23 (1.10-1.31)``."""
    median = statistics.median(values)
    return f"{median:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def ratios(new: Sequence[float], old: Sequence[float]) -> str:
    """newest / 2.15 of each pair of turns: the median with the range, as ``1.23x (1.10-1.31x)``."""
    each = [a / b for a, b in zip(new, old)]
    return f"{statistics.median(each):.2f}x ({min(each):.2f}-{max(each):.2f}x)"


def print_versions(versions: dict[str, dict[str, str]], paths: dict[str, Path]) -> None:
    print(
        f"{'lane':<10}{'Python':>9}{'TensorFlow':>12}{'Keras':>9}{'numpy':>9}{'protobuf':>10}"
        f"{'grpcio':>9}  interpreter"
    )
    for lane, found in versions.items():
        print(
            f"{lane:<10}{found['python']:>9}{found['tensorflow']:>12}{found['keras']:>9}"
            f"{found['numpy']:>9}{found['protobuf']:>10}{found['grpcio']:>9}  {paths[lane]}"
        )
    print()


def print_predict(runs: dict[str, list[dict[str, float]]], names: dict[str, str], rows: int) -> None:
    old, new = runs["2.15"], runs["newest"]
    print(
        f"tfship predict CSV->CSV, {rows:,} rows, signature {SIGNATURE}, batch {BATCH}, a fresh "
        f"process each; median of {len(old)} turns (min-max)"
    )
    print(f"{'lane':<26}{'job s':>20}{'job rows/s':>12}{'wall s':>22}{'wall rows/s':>13}{'peak RSS MB':>13}")
    for lane, turns in runs.items():
        job = [t["job"] for t in turns]
        wall = [t["wall"] for t in turns]
        print(
            f"{names[lane]:<26}{spread(job, '.3f'):>20}{rows / statistics.median(job):>12,.0f}"
            f"{spread(wall, '.2f'):>22}{rows / statistics.median(wall):>13,.0f}"
            f"{statistics.median(t['rss'] for t in turns):>13,.0f}"
        )
    job_ratio = ratios([rows / t["job"] for t in new], [rows / t["job"] for t in old])
    wall_ratio = ratios([rows / t["wall"] for t in new], [rows / t["wall"] for t in old])
    print(f"newest / 2.15, tfship predict rows/s: job {job_ratio}, wall {wall_ratio}")
    print()


SIDES = {
    "serve": "tfship serve",
    "model": "floor running the model",
    "floor": "transport floor (constant reply)",
}


def print_serving(
    rates: dict[tuple[str, str, int], list[float]],
    names: dict[str, str],
    seconds: float,
    repeats: int,
    same: bool,
) -> None:
    print(
        f"Predict at batch 1 over gRPC (one tf.Example, signature {SIGNATURE}, every output), "
        f"requests/s; median of {repeats} turns of {seconds:g} s (min-max)"
    )
    print(f"{'server':<34}{'clients':>8}{names['2.15']:>24}{names['newest']:>24}{'newest / 2.15':>22}")
    for side, label in SIDES.items():
        for n in CLIENTS:
            old, new = rates[side, "2.15", n], rates[side, "newest", n]
            print(
                f"{label:<34}{n:>8}{spread(old, ',.0f'):>24}{spread(new, ',.0f'):>24}{ratios(new, old):>22}"
            )
    print(f"the same answers from both servers (probabilities within 1e-5): {same}")
    for n in CLIENTS:
        cells = []
        for lane in ("2.15", "newest"):
            serve, model = (statistics.median(rates[side, lane, n]) for side in ("serve", "model"))
            cells.append(f"{lane} {serve / model:.2f}x")
        print(f"tfship serve / floor running the model, {n} client{'s' if n > 1 else ''}: {', '.join(cells)}")
    # the model's own run per call: the model floor's time per request less the transport floor's
    runs = {}
    for lane in ("2.15", "newest"):
        model, floor = (statistics.median(rates[side, lane, 1]) for side in ("model", "floor"))
        runs[lane] = (1 / model - 1 / floor) * 1e3
    print(
        f"the model's own run per call, 1 client (floor running the model less the transport "
        f"floor): 2.15 {runs['2.15']:.3f} ms, newest {runs['newest']:.3f} ms "
        f"(newest / 2.15 {runs['newest'] / runs['2.15']:.2f}x the time)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows",
        type=int,
        default=None,
        help="rows of the synthetic CSV (default 300,000; 2,000 with --short)",
    )
    parser.add_argument(
        "--seconds", type=float, default=None, help="per serving measurement (default 2; 0.2 with --short)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="turns of each measurement (default 4; 2 with --short)"
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="training steps of the dnn (default 100; 5 with --short)"
    )
    parser.add_argument(
        "--run-python",
        type=Path,
        default=ROOT / ".venv-run" / "bin" / "python",
        help="the newest TensorFlow lane's Python (default: .venv-run/bin/python)",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep the files here")
    parser.add_argument(
        "--short", action="store_true", help="every row on small sizes, to see that each path runs"
    )
    args = parser.parse_args()
    rows = args.rows or (2_000 if args.short else 300_000)
    seconds = args.seconds or (0.2 if args.short else 2.0)
    repeats = args.repeats or (2 if args.short else 4)
    steps = args.steps or (5 if args.short else 100)
    if importlib.util.find_spec("tensorflow_estimator") is None:
        raise SystemExit(
            "error: run this with .venv's Python (tfship[estimator], TensorFlow 2.15): "
            "it trains the export both lanes run"
        )
    run_python = Path(os.path.abspath(args.run_python))
    if not run_python.is_file() or not (run_python.parent / "tfship").is_file():
        raise SystemExit(
            f"error: {run_python} (with tfship beside it) is missing: `make test-run` "
            "builds .venv-run, the newest TensorFlow lane"
        )
    this_python = Path(os.path.abspath(sys.executable))
    pythons = {"2.15": this_python, "newest": run_python}
    lanes = {lane: python.parent / "tfship" for lane, python in pythons.items()}
    versions = {lane: lane_versions(python) for lane, python in pythons.items()}
    print_versions(versions, pythons)
    sys.stdout.flush()
    names = {
        lane: f"TF {found['tensorflow']} ({pythons[lane].parent.parent.name})"
        for lane, found in versions.items()
    }
    with tempfile.TemporaryDirectory(prefix="tfship-lanes-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        schema, export, csv_path = setup(workdir, lanes["2.15"], rows, steps)
        request = predict_request(schema, csv_path)
        request_file = workdir / "request.pb"
        request_file.write_bytes(request)
        processes = start_sides(pythons, export, request_file)
        try:
            if not args.short:  # loaded before the predict turns, idle through them
                addresses, same = ready(processes, request)
            runs = predict_turns(lanes, export, csv_path, workdir, repeats)
            if args.short:  # started while the predict turns ran: nothing is judged
                addresses, same = ready(processes, request)
            rates = serving_turns(addresses, list(pythons), request, seconds, repeats)
        finally:
            stop(list(processes.values()))
    print_predict(runs, names, rows)
    print_serving(rates, names, seconds, repeats, same)
    if args.short:
        print(
            "(--short: small sizes and few turns, the servers starting during the tfship "
            "predict turns, to see that each path runs)"
        )


if __name__ == "__main__":
    main()
