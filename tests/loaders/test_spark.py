"""`tfship predict --runner spark` and `tfship.loaders.spark` on a real standalone Spark cluster.

One master and two one-core workers run as separate processes on loopback for the whole module,
each started as a user starts them (`spark-class ...Master` / `...Worker`); the driver is this
process. The worker kill test runs last: it leaves one worker.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyspark  # the spark extra, which make test installs
import pytest
from click.testing import CliRunner

import tfship
from loaders.support import EstimatorExports, make_rows, records_of
from loaders.test_job import BAD_LINES, write_csv, write_input
from tfship.cli import cli
from tfship.loaders import JobSpec, load
from tfship.loaders.spark import predict, run_job

pytestmark = [
    pytest.mark.slow,
    # pyspark's collect leaves its local socket for the garbage collector to close
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

PENGUIN_BAD = [
    "Adelie,Dream,abc,18.0,190,3500,male,2008",  # bill_length_mm is not a number
    "Adelie,Dream,39.0,18.0,190,3500,male",  # one cell short
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    url: str
    ui: int
    workers: list[subprocess.Popen[bytes]]
    session: Any

    def alive_workers(self) -> int:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as answer:
            return int(json.load(answer)["aliveworkers"])


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    with open(log, "wb") as out:
        # Its own session: killing the group ends the JVM and whatever it started.
        return subprocess.Popen(
            [str(spark_class), *args], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from pyspark.sql import SparkSession

    root = tmp_path_factory.mktemp("spark")
    src = str(Path(tfship.__file__).parents[1])
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        # the executors' Python workers import this checkout of tfship
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
    }
    port, ui = _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    master = _start(
        [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        ],
        env,
        root / "master.log",
    )
    workers = [
        _start(
            [
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--cores",
                "1",
                "--memory",
                "2g",
                "--host",
                "127.0.0.1",
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(root / f"work{i}"),
            ],
            env,
            root / f"worker{i}.log",
        )
        for i in range(2)
    ]
    found = Cluster(url, ui, workers, None)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if found.alive_workers() == 2:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (root / "master.log").read_text()[-2000:]
            time.sleep(0.5)
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        found.session = (
            SparkSession.builder.master(url)
            .appName("tfship tests")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.executor.memory", "1g")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.task.maxFailures", "2")  # a lost worker is retried; a bad file fails fast
            .getOrCreate()
        )
        yield found
    finally:
        if found.session is not None:
            found.session.stop()
        for process in [*workers, master]:
            _stop(process)


def _penguins(tiny_model: Any, tmp_path: Path) -> list[Path]:
    lines = tiny_model.eval_csv.read_text().splitlines()
    csv_in = tmp_path / "eval.csv"
    csv_in.write_text("\n".join(lines[:1] + lines[1:41] + PENGUIN_BAD + lines[41:]) + "\n")
    frame = pd.read_csv(tiny_model.eval_csv)
    jsonl_in = tmp_path / "more.jsonl"
    records = frame.head(25).to_dict("records")
    text = "".join(json.dumps({k: (None if v != v else v) for k, v in r.items()}) + "\n" for r in records)
    jsonl_in.write_text(text + '{"species": "Gentoo", "island": \n')
    parquet_in = tmp_path / "more.parquet"
    frame.tail(30).to_parquet(parquet_in)
    return [csv_in, jsonl_in, parquet_in]


def _predict(model: Path, inputs: list[Path], out: Path, *extra: str) -> Any:
    args = [
        "predict",
        str(model),
        *map(str, inputs),
        "-o",
        str(out),
        "--rejects",
        str(out.with_suffix(".rejects.jsonl")),
        "--json",
        *extra,
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_cluster_writes_what_the_local_runner_writes(
    cluster: Cluster, tiny_model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    inputs = _penguins(tiny_model, tmp_path)
    with open(inputs[0], "a") as f:
        f.write("\n")  # a blank last line: no row, and both runners say they skipped it
    model = tiny_model.export()
    keep = ["--keep-columns", "species", "--outputs", "scores,classes"]
    notes: dict[str, list[str]] = {}
    for runner in ("local", "spark"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tfship.loaders"):
            if runner == "local":
                local = _predict(model, inputs, tmp_path / "local.csv", *keep)
            else:
                spark = _predict(
                    model, inputs, tmp_path / "spark.csv", *keep, "--runner", "spark", "--master", cluster.url
                )
        notes[runner] = [r.getMessage() for r in caplog.records if "blank line" in r.getMessage()]
    lines_total = len(inputs[0].read_text().split("\n")) - 1
    assert (
        notes["spark"]
        == notes["local"]
        == [f"skipped 1 blank line(s) of {inputs[0]}, at line(s) {lines_total}"]
    )
    for key in ("rows_in", "predicted", "rejected"):
        assert spark[key] == local[key]
    lines_in = len(tiny_model.eval_csv.read_text().splitlines()) - 1
    assert spark["rows_in"] == lines_in + 2 + 26 + 30
    reasons = [json.loads(line) for line in (tmp_path / "spark.rejects.jsonl").read_text().splitlines()]
    assert {(r["file"], r["line"]) for r in reasons} >= {
        (str(inputs[0]), 42),
        (str(inputs[0]), 43),
        (str(inputs[1]), 26),
    }
    assert spark["predicted"] + spark["rejected"] == spark["rows_in"]
    want, got = pd.read_csv(tmp_path / "local.csv"), pd.read_csv(tmp_path / "spark.csv")
    assert list(got.columns) == list(want.columns)
    assert got["species"].tolist() == want["species"].tolist()  # same rows, same order
    scores = [c for c in want.columns if c.startswith("scores")]
    np.testing.assert_allclose(got[scores], want[scores], atol=1e-6)
    assert (tmp_path / "spark.rejects.jsonl").read_text() == (tmp_path / "local.rejects.jsonl").read_text()
    # three files, two parts each, on two one-core executors: each Python worker loaded the
    # model once, however many tasks and batches it ran
    info = spark["spark"]
    assert info["master"] == cluster.url and info["tasks"] == 6
    assert 1 <= info["python_workers"] <= 2 < info["tasks"]
    assert info["model_loads"] == info["python_workers"]


def test_a_raw_signature_export_through_the_cluster(
    cluster: Cluster, estimator_exports: EstimatorExports, tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "in.csv", make_rows(40, seed=41), extra=BAD_LINES)
    tfrecord = write_input("tfrecord", tmp_path, make_rows(12, seed=42))
    keep = ["id"]
    local_out, spark_out = tmp_path / "local.jsonl", tmp_path / "spark.jsonl"
    with load(estimator_exports.raw) as model:
        from tfship.loaders import run_job as run_local

        local = run_local(
            model,
            JobSpec(
                [str(source), str(tfrecord)], local_out, rejects=tmp_path / "local.rej", keep_columns=keep
            ),
        )
    summary = run_job(
        estimator_exports.raw,
        JobSpec([str(source), str(tfrecord)], spark_out, rejects=tmp_path / "spark.rej", keep_columns=keep),
    )
    assert (
        (summary.rows_in, summary.predicted, summary.rejected)
        == (local.rows_in, local.predicted, local.rejected)
        == (55, 52, 3)
    )
    want = [json.loads(line) for line in local_out.read_text().splitlines()]
    got = [json.loads(line) for line in spark_out.read_text().splitlines()]
    assert [r["id"] for r in got] == [r["id"] for r in want]
    # the default outputs: each row's class and its probability, as the local runner writes them
    assert [r["class"] for r in got] == [r["class"] for r in want]
    np.testing.assert_allclose([r["probability"] for r in got], [r["probability"] for r in want], atol=1e-6)
    assert (tmp_path / "spark.rej").read_text() == (tmp_path / "local.rej").read_text()


def test_predict_scores_a_dataframe_and_keeps_bad_rows_with_their_reason(
    cluster: Cluster, tiny_model: Any
) -> None:
    frame = pd.read_csv(tiny_model.eval_csv).dropna().head(30).reset_index(drop=True)
    frame = frame.astype({"flipper_length_mm": "int64", "body_mass_g": "int64"})
    frame.insert(0, "id", range(len(frame)))
    records = frame.astype(object).to_dict("records")
    records[3]["island"] = None  # a string feature without a default: a reject
    df = cluster.session.createDataFrame(records).select(*frame.columns).repartition(3)
    scored = predict(df, tiny_model.export(), outputs=["scores", "classes"])
    assert scored.columns == [*frame.columns, "scores", "classes", "reject"]
    rows = sorted(scored.collect(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == list(range(30))
    features = frame.drop(columns=["id", "species"])
    with load(tiny_model.export()) as model:
        want = model.predict(features.drop(index=3), outputs=["scores"])["scores"]
        with pytest.raises(tfship.errors.ModelInputError) as refused:
            model.predict(features.iloc[[3]].assign(island=[None]))
    got = [r["scores"] for r in rows if r["id"] != 3]
    np.testing.assert_allclose(got, want, atol=1e-6)
    bad = [r for r in rows if r["reject"] is not None]
    assert len(bad) == 1 and bad[0]["scores"] is None and bad[0]["classes"] is None
    assert bad[0]["id"] == 3
    assert bad[0]["reject"] == "field 'island': missing, and the feature has no default"
    assert "island" in str(refused.value)


@pytest.mark.parametrize(
    ("signature", "written"),
    [
        ("regression", ["prediction"]),
        ("serving_default", ["class", "probability"]),
    ],
)
def test_predict_names_its_columns_as_tfship_predict_does(
    cluster: Cluster,
    estimator_exports: EstimatorExports,
    tmp_path: Path,
    signature: str,
    written: list[str],
) -> None:
    rows = make_rows(8, seed=44)
    out = tmp_path / "local.csv"
    source = write_csv(tmp_path / "in.csv", rows)
    local = CliRunner().invoke(
        cli, ["predict", str(estimator_exports.parsing), str(source), "-o", str(out), "-s", signature]
    )
    assert local.exit_code == 0, local.output
    want = pd.read_csv(out, dtype={"class": str})
    assert list(want.columns) == written
    schema = "x float, v2 array<float>, color string, tags array<string>"
    df = cluster.session.createDataFrame(records_of(rows), schema).coalesce(1)
    scored = predict(df, estimator_exports.parsing, signature=signature)
    assert scored.columns == [*df.columns, *written, "reject"]
    got = scored.collect()  # in df's order: one partition
    for name in written:
        if name == "class":
            assert [r[name] for r in got] == want[name].tolist()
        else:
            np.testing.assert_allclose([r[name] for r in got], want[name], rtol=1e-5)


def test_a_dataframe_without_a_required_feature_is_refused(cluster: Cluster, tiny_model: Any) -> None:
    df = cluster.session.createDataFrame(pd.read_csv(tiny_model.eval_csv).head(3).drop(columns=["island"]))
    with pytest.raises(tfship.errors.InputError, match="the DataFrame has no column 'island'"):
        predict(df, tiny_model.export())


def test_a_dataframe_of_one_row_is_scored(cluster: Cluster, tiny_model: Any) -> None:
    # a batch of one is where hand-written predict_batch_udf functions used to fail
    frame = pd.read_csv(tiny_model.eval_csv).dropna().head(1)
    rows = predict(cluster.session.createDataFrame(frame), tiny_model.export(), outputs=["scores"]).collect()
    assert len(rows) == 1 and rows[0]["reject"] is None and len(rows[0]["scores"]) == 3


def test_a_failed_task_is_one_line_and_writes_nothing(
    cluster: Cluster, estimator_exports: EstimatorExports, tmp_path: Path
) -> None:
    source = write_input("tfrecord", tmp_path, make_rows(12, seed=43))
    source.write_bytes(source.read_bytes()[:-7])  # the last record is cut short
    out = tmp_path / "o.csv"
    result = CliRunner().invoke(
        cli,
        [
            "predict",
            str(estimator_exports.parsing),
            str(source),
            "-o",
            str(out),
            "--runner",
            "spark",
            "--master",
            cluster.url,
        ],
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {source}: corrupt TFRecord after record ")
    assert not out.exists()


def test_an_unknown_master_is_refused_before_anything_starts(tiny_model: Any, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "predict",
            str(tiny_model.export()),
            str(tiny_model.eval_csv),
            "-o",
            str(tmp_path / "o.csv"),
            "--runner",
            "spark",
            "--master",
            "foo",
        ],
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: Spark master 'foo': expected local, local[N], local[*], spark://HOST:PORT, yarn or k8s://URL"
    )


def test_master_without_the_spark_runner_is_a_usage_error(tiny_model: Any, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "predict",
            str(tiny_model.export()),
            str(tiny_model.eval_csv),
            "-o",
            str(tmp_path / "o.csv"),
            "--master",
            "local[2]",
        ],
    )
    assert result.exit_code == 2
    assert "--master is for --runner spark" in result.output


def test_no_java_is_one_line(tiny_model: Any, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)  # the venv's python, and no java
    env["PYTHONPATH"] = str(Path(tfship.__file__).parents[1])
    out = tmp_path / "o.csv"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfship",
            "predict",
            str(tiny_model.export()),
            str(tiny_model.eval_csv),
            "-o",
            str(out),
            "--runner",
            "spark",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "Error: Spark needs Java 17 or newer and found none (no java on PATH and JAVA_HOME unset); "
        "install a JDK (e.g. openjdk-17-jre-headless) or set JAVA_HOME"
    ]
    assert not out.exists()


def test_a_java_older_than_17_is_one_line(
    tiny_model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = tmp_path / "jdk8" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho 'openjdk version \"1.8.0_392\"' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(java.parents[1]))
    result = CliRunner().invoke(
        cli,
        [
            "predict",
            str(tiny_model.export()),
            str(tiny_model.eval_csv),
            "-o",
            str(tmp_path / "o.csv"),
            "--runner",
            "spark",
        ],
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: Spark needs Java 17 or newer; {java} is Java 8: install a newer JDK "
        "(e.g. openjdk-17-jre-headless) and point JAVA_HOME at it"
    )


def _cpu_seconds(process: subprocess.Popen[bytes]) -> float:
    """CPU time of the Python processes under one Spark worker (pyspark's daemon makes its
    own process group, so they are found by parent, not by group)."""
    stats: dict[int, tuple[int, int, bool]] = {}  # pid -> (parent, ticks, is pyspark)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            python = b"pyspark" in (entry / "cmdline").read_bytes()
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]), python)
    ticks = 0
    for pid, (_, used, python) in stats.items():
        ancestor = pid
        while ancestor in stats and ancestor != process.pid:
            ancestor = stats[ancestor][0]
        if ancestor == process.pid and python:
            ticks += used
    return ticks / os.sysconf("SC_CLK_TCK")


def test_a_worker_killed_mid_job_loses_and_duplicates_nothing(
    cluster: Cluster, tiny_model: Any, tmp_path: Path
) -> None:
    lines = tiny_model.eval_csv.read_text().splitlines()
    inputs = []
    for i in range(4):  # four files, eight tasks: enough for both workers to be busy
        path = tmp_path / f"part{i}.csv"
        path.write_text("\n".join(lines[:1] + lines[1:] * 200 + PENGUIN_BAD[:1]) + "\n")
        inputs.append(path)
    local = _predict(tiny_model.export(), inputs, tmp_path / "local.csv", "--keep-columns", "species")
    victim = cluster.workers[0]
    killed = threading.Event()
    done = threading.Event()

    def kill_when_busy() -> None:
        # Python workers idle from earlier tests: kill once they burn CPU for this job's task
        start = _cpu_seconds(victim)
        while not done.is_set():
            if _cpu_seconds(victim) - start > 0.3:
                os.killpg(victim.pid, signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    try:
        spark = _predict(
            tiny_model.export(),
            inputs,
            tmp_path / "spark.csv",
            "--keep-columns",
            "species",
            "--runner",
            "spark",
            "--master",
            cluster.url,
        )
    finally:
        done.set()
        killer.join()
    assert killed.is_set(), "the job ended before a task ran on the worker to kill"
    victim.wait()
    for key in ("rows_in", "predicted", "rejected"):
        assert spark[key] == local[key]
    assert spark["rows_in"] == 4 * ((len(lines) - 1) * 200 + 1)
    want, got = pd.read_csv(tmp_path / "local.csv"), pd.read_csv(tmp_path / "spark.csv")
    assert len(got) == len(want) == spark["predicted"]
    assert got["species"].tolist() == want["species"].tolist()
    scores = [c for c in want.columns if c.startswith("scores")]
    np.testing.assert_allclose(got[scores], want[scores], atol=1e-6)
    assert (tmp_path / "spark.rejects.jsonl").read_text() == (tmp_path / "local.rejects.jsonl").read_text()


def test_the_jvm_start_up_files_are_private_to_the_run(tmp_path: Path) -> None:
    # Another user's symlinks under the names the start-up files once had in the temp directory:
    # neither is followed, and the run leaves nothing of its own there.
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    for name in ("tfship-spark.log", "tfship-spark-log4j2.properties"):
        (shared / name).symlink_to(victim)
    code = (
        "import os, stat, tfship.loaders._spark as s\n"
        "made = []\n"
        "real = s.tempfile.mkdtemp\n"
        "def spy(*a, **k):\n"
        "    made.append(real(*a, **k)); return made[-1]\n"
        "s.tempfile.mkdtemp = spy\n"
        "session = s.start_session('local[1]')\n"
        "session.stop()\n"
        "print(made[0])\n"
    )
    env = {
        **os.environ,
        "TMPDIR": str(shared),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": str(Path(tfship.__file__).parents[1]),
    }
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    private = Path(done.stdout.strip().splitlines()[-1])
    assert private.parent == shared and private.name.startswith("tfship-spark-")
    assert not private.exists()  # removed once Spark was up
    assert victim.read_text() == "mine\n"
    assert sorted(p.name for p in shared.iterdir() if p.name.startswith("tfship")) == [
        "tfship-spark-log4j2.properties",
        "tfship-spark.log",
    ]


def _spark_command(
    python_args: list[str], export: Path, inputs: Path, *extra: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``tfship predict EXPORT INPUTS -o - --runner spark EXTRA`` in a process of its own."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(Path(tfship.__file__).parents[1])}
    user_args = [str(export), str(inputs), "-o", "-", "--runner", "spark", *extra]
    command = [sys.executable, *python_args, "predict", *user_args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def test_what_the_command_says_after_spark_started_reaches_stderr(tiny_model: Any, tmp_path: Path) -> None:
    # Spark's JVM starts with its notices in a file while TensorFlow is imported quietly: the
    # two redirections of stderr overlap, and the rejects, the summary and any error that
    # follow must still reach the user's stderr.
    inputs = _penguins(tiny_model, tmp_path)
    done = _spark_command(["-m", "tfship"], tiny_model.export(), inputs[0], "--master", "local[2]")
    assert done.returncode == 0, done.stderr
    lines_in = len(tiny_model.eval_csv.read_text().splitlines()) - 1
    assert f"rows in: {lines_in + 2}, predicted: {lines_in}, rejected: 2 (" in done.stderr
    assert done.stderr.count("rejected ") == 2  # each reject, named on stderr as it is written
    assert len(done.stdout.splitlines()) == lines_in


# Holds the import lock (finders run under it) for three seconds when TensorFlow is imported,
# then takes logging's lock, as setuptools' distutils finder does when it imports setuptools.
_SLOW_FINDER = """
import importlib.abc, logging, sys, time
class SlowFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "tensorflow":
            time.sleep(3)
            logging.getLogger("slow-finder")
        return None
sys.meta_path.insert(0, SlowFinder())
from tfship.cli import main
sys.argv = ["tfship", *sys.argv[1:]]
main()
"""


def test_the_jvm_starts_while_no_other_thread_of_the_command_imports(tiny_model: Any, tmp_path: Path) -> None:
    # pyspark forks the JVM with a preexec_fn: the fork takes logging's lock, then the import
    # lock. Were the JVM forked while the model's load imports TensorFlow, a finder that logs
    # under the import lock (setuptools' distutils finder) would leave both threads waiting
    # for ever; the finder here makes that window three seconds wide.
    code = ["-c", _SLOW_FINDER]
    done = _spark_command(code, tiny_model.export(), tiny_model.eval_csv, "--master", "local[1]", timeout=240)
    assert done.returncode == 0, done.stderr
    rows = len(tiny_model.eval_csv.read_text().splitlines()) - 1
    assert len(done.stdout.splitlines()) == rows
