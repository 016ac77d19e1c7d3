"""``tfship predict`` on a full disk or a read-only place: one line naming the file, nothing
half published, and the user's old files as they were.

A full disk is made with ``RLIMIT_FSIZE`` in a child process (SIGXFSZ ignored, so a write past
the limit fails with EFBIG): it needs no privilege and no mount, so it runs the same as root in
CI and as a user on a laptop. A read-only place is ``read_only.read_only_dir``.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from read_only import CAUSE, read_only_dir
from tfship.cli import cli

LIMIT = 4096  # bytes a file of the child may hold


@pytest.fixture(scope="module")
def adder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import tensorflow as tf

    module = tf.Module()
    ab = [tf.TensorSpec([None], tf.float32, name="a"), tf.TensorSpec([None], tf.float32, name="b")]
    module.f = tf.function(lambda a, b: {"y": a + b}, ab, autograph=False)
    path = tmp_path_factory.mktemp("adder") / "1"
    tf.saved_model.save(module, str(path), signatures=module.f)
    return path


def _small_files() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _predict_on_small_disk(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tfship", "predict", *args],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_small_files,
        timeout=120,
    )


def test_rejects_that_do_not_fit_publish_nothing(adder: Path, tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    # 5 good rows (a small output) and 40 bad ones with long records (rejects past the limit,
    # all in the stream's buffer until it is closed, where the full disk shows)
    bad = [f"not-a-number-{'x' * 60},{i}" for i in range(40)]
    rows.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(5)) + "\n".join(bad) + "\n")
    preds, rejects = tmp_path / "preds.csv", tmp_path / "rejects.jsonl"
    preds.write_text("old predictions\n")
    rejects.write_text("old rejects\n")
    done = _predict_on_small_disk(str(adder), str(rows), "-o", str(preds), "--rejects", str(rejects))
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"Error: {rejects}: File too large"
    assert "Traceback" not in done.stderr
    assert preds.read_text() == "old predictions\n"  # not published without its rejects
    assert rejects.read_text() == "old rejects\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.csv", "rejects.jsonl", "rows.csv"]


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet", "tfrecord"])
def test_an_output_that_does_not_fit_is_one_line(adder: Path, tmp_path: Path, suffix: str) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(3000)))
    preds = tmp_path / f"preds.{suffix}"
    done = _predict_on_small_disk(
        str(adder), str(rows), "-o", str(preds), "--rejects", str(tmp_path / "rejects.jsonl")
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"Error: {preds}: File too large"
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]  # no temporaries left


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    with read_only_dir(tmp_path / "read-only") as place:
        yield place


def test_a_read_only_output_is_one_line(adder: Path, tmp_path: Path, read_only: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("a,b\n1,2\n")
    preds = read_only / "preds.csv"
    result = CliRunner().invoke(cli, ["predict", str(adder), str(rows), "-o", str(preds)])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"Error: {preds}: {CAUSE}"
    rejects = read_only / "rejects.jsonl"
    result = CliRunner().invoke(
        cli, ["predict", str(adder), str(rows), "-o", str(tmp_path / "p.csv"), "--rejects", str(rejects)]
    )
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"Error: {rejects}: {CAUSE}"
    assert not (tmp_path / "p.csv").exists()


def test_a_killed_predict_leaves_temporaries_the_next_run_removes(adder: Path, tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("a,b\n" + "1,2\n" * 400_000)
    preds, rejects = tmp_path / "preds.csv", tmp_path / "rejects.jsonl"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    args = [str(adder), str(rows), "-o", str(preds), "--rejects", str(rejects)]
    child = subprocess.Popen(
        [sys.executable, "-m", "tfship", "predict", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob(".*.tmp"))) < 2:  # both writers have begun
            assert child.poll() is None and time.monotonic() < deadline, "predict ended before the kill"
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
    left = sorted(p.name for p in tmp_path.glob(".*.tmp"))
    assert [name.split(".")[1] for name in left] == ["preds", "rejects"]
    result = CliRunner().invoke(cli, ["predict", *args])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.csv", "rejects.jsonl", "rows.csv"]


def test_the_command_leaves_with_every_row_written_and_its_times_from_its_start(
    adder: Path, tmp_path: Path
) -> None:
    # the process ends without tearing TensorFlow down: what it wrote must all be there
    rows = tmp_path / "rows.csv"
    rows.write_text("a,b\n" + "1,2\n" * 5000)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tfship", "predict", str(adder), str(rows), "-o", "-", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['{"y":3.0}'] * 5000
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    assert summary["predicted"] == 5000
    assert summary["startup_seconds"] + summary["seconds"] == pytest.approx(
        summary["total_seconds"], abs=1e-3
    )
    # the process's start is known to a clock tick (/proc/self/stat): it may read up to one
    # tick earlier than it was
    assert 0 < summary["total_seconds"] <= wall + 1.0 / os.sysconf("SC_CLK_TCK")


def test_ctrl_c_while_the_model_loads_exits_130_leaving_nothing(adder: Path, tmp_path: Path) -> None:
    # the model loads in a thread while the job opens its files: a Ctrl-C then stops both
    rows = tmp_path / "rows.csv"
    rows.write_text("a,b\n" + "1,2\n" * 400_000)
    preds, rejects = tmp_path / "preds.csv", tmp_path / "rejects.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-m", "tfship", "predict", str(adder), str(rows), "-o", str(preds)]
        + ["--rejects", str(rejects)],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob(".*.tmp"))) < 2:  # the job has begun
            assert child.poll() is None and time.monotonic() < deadline, "predict ended before Ctrl-C"
            time.sleep(0.01)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=120)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1] == "Aborted!"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


def test_a_model_that_fails_to_load_is_the_error_and_nothing_is_published(
    adder: Path, tmp_path: Path
) -> None:
    import shutil

    broken = tmp_path / "broken" / "1"
    shutil.copytree(adder, broken)
    for part in (broken / "variables").iterdir():
        part.unlink()
    rows, empty = tmp_path / "rows.csv", tmp_path / "empty.csv"
    rows.write_text("a,b\n" + "1,2\n" * 50_000)
    empty.write_text("a,b\n")
    for source in (rows, empty):  # with rows read while it loads, and with none to run it on
        preds = tmp_path / "preds.csv"
        result = CliRunner().invoke(cli, ["predict", str(broken), str(source), "-o", str(preds)])
        assert result.exit_code == 2, result.output
        assert result.output.startswith(f"Error: cannot load the SavedModel at {broken}: "), result.output
        assert len(result.output.strip().splitlines()) == 1
        assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "empty.csv", "rows.csv"]
