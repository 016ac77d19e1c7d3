"""tfship promote on real exports: each check refuses what it should, and publishing is atomic."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.errors import InputError
from tfship.inspect import content_hash, example_request, read_saved_model, write_warmup
from tfship.promote import PromoteOptions, Threshold, promote, rollback
from tfship.serve_client import ServingClient

from .conftest import base_with, serving

pytestmark = pytest.mark.slow

# latency is the subject of one test only: elsewhere a loose ratio keeps a busy machine's noise
# from refusing a candidate for being slower
FAST = ["--latency-calls", "15", "--max-latency-ratio", "100"]


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["promote", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _versions(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.name.isdigit())


def _lines(stdout: str) -> dict[str, str]:
    return {line[:13].strip(): line[13:].strip() for line in stdout.splitlines() if line[:13].strip()}


def test_a_further_trained_model_is_promoted_and_served(tiny_model, tmp_path: Path) -> None:
    older, newer = (Path(p) for p in tiny_model.result.exports["latest"][-2:])
    base = base_with(tmp_path, older)
    with serving(base) as address, ServingClient(address, timeout=30) as client:
        assert client.wait_until_available("m", timeout=30).version == 1
        code, out, err = _run(
            str(newer),
            "--to",
            str(base),
            "--requests",
            str(tiny_model.eval_csv),
            "--max-diff",
            "1",
            "--min-agreement",
            "0.5",
            *FAST,
        )
        assert code == 0, out + err
        lines = _lines(out)
        assert list(lines)[:6] == ["ready", "compatible", "serves", "same answers", "as good", "as fast"]
        assert all(verdict.startswith("pass ") for verdict in list(lines.values())[:6]), out
        assert out.strip().splitlines()[-1] == f"promoted: version 2 at {base / '2'}"
        assert client.wait_until_available("m", version=2, timeout=30).state == "AVAILABLE"
    assert content_hash(base / "2") == content_hash(newer)
    record = json.loads((base / "2.promotion.json").read_text())
    assert record["promoted"] and record["fingerprint"] == content_hash(newer)
    assert [c["check"] for c in record["checks"]] == [
        "ready",
        "compatible",
        "serves",
        "same answers",
        "as good",
        "as fast",
    ]
    assert record["source"] == str(newer.resolve())
    assert not [p for p in base.iterdir() if p.name.startswith(".")]


def test_a_renamed_output_is_refused_on_compatibility_naming_it(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    code, out, err = _run(str(modules["renamed"]), "--to", str(base), *FAST)
    assert code == 3, out + err
    lines = _lines(out)
    assert lines["compatible"].startswith("fail") and "scores" in lines["compatible"]
    assert "removed" in lines["compatible"]
    # every check still ran and said something
    assert set(lines) >= {"ready", "compatible", "serves", "same answers", "as good", "as fast"}
    assert err.strip() == "Error: refused: compatible, same answers failed; nothing was published"
    assert _versions(base) == ["1"]


def test_different_answers_are_refused_and_loosening_lets_them_through(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    args = [str(modules["differs"]), "--to", str(base), "--requests", str(modules["requests"]), *FAST]
    code, out, err = _run(*args, "--dry-run")
    assert code == 3, out + err
    assert _lines(out)["same answers"].startswith("fail ")
    assert "20 rows" in out and "differs on scores" in out
    code, out, err = _run(*args, "--dry-run", "--max-diff", "1", "--min-agreement", "0")
    assert code == 0, out + err
    assert _lines(out)["compatible"].startswith("pass  1 change: weights_changed variables: "), out
    assert _lines(out)["as fast"].startswith(
        f"pass  batches of 1, 32 rows taken in order from the 20 rows of {modules['requests']} "
        "(again from the first to fill a larger batch): batch 1: "
    ), out
    assert out.strip().splitlines()[-1] == "would promote (dry run): nothing was published"
    assert _versions(base) == ["1"]


@pytest.mark.timing
def test_a_slower_candidate_is_refused_on_latency(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    decision = promote(modules["slower"], base, PromoteOptions(batches=(1,), latency_calls=10))
    assert not decision.promoted and [c.name for c in decision.failed] == ["as fast"]
    fast = decision.checks[-1]
    assert fast.numbers["batches"]["1"]["ratio_p50"] > 1.25
    assert "slower than x1.25 at batch 1" in fast.summary
    assert _versions(base) == ["1"]


@pytest.mark.estimator  # it exports a worse checkpoint
def test_a_worse_trained_model_is_refused_by_change_on_eval_data(tiny_model, tmp_path: Path) -> None:
    untrained = tmp_path / "untrained"
    result = CliRunner().invoke(
        cli,
        [
            "export",
            "--model-dir",
            str(tiny_model.model_dir),
            "--checkpoint",
            str(tiny_model.model_dir / "model.ckpt-0"),
            "--out",
            str(untrained),
            "--no-verify",
        ],
    )
    assert result.exit_code == 0, result.output
    (candidate,) = untrained.iterdir()
    base = base_with(tmp_path, tiny_model.export("final"))
    options = PromoteOptions(
        eval_file=tiny_model.eval_csv,
        changes=(Threshold.parse("accuracy>=-0.01"),),
        requests=tiny_model.eval_csv,
        min_agreement=0.0,
        max_diff=1.0,
        latency_calls=10,
        max_latency_ratio=100.0,
    )
    decision = promote(candidate, base, options)
    # a Classify signature tiles every class name in "classes": agreement is of the class picked
    outputs = {o["output"]: o for o in decision.checks[3].numbers["outputs"]}
    assert outputs["classes"]["agreement"] == outputs["scores"]["agreement"] < 1.0
    good = decision.checks[4]
    assert good.name == "as good" and good.verdict == "fail", good.summary
    assert "not met: change accuracy>=-0.01" in good.summary
    assert good.numbers["candidate"]["accuracy"] < good.numbers["baseline"]["accuracy"]
    assert _versions(base) == ["1"]


def test_a_threshold_on_an_unmeasured_metric_is_refused_naming_the_flag(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    code, out, err = _run(str(modules["same"]), "--to", str(base), "--threshold", "acc>=0.5", *FAST)
    assert code == 2
    assert err.startswith("Error: --threshold acc>=0.5: no metric 'acc'")
    assert _versions(base) == ["1"]


def test_a_candidate_that_cannot_load_is_refused_and_promote_stays_up(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    code, out, err = _run(str(modules["broken"]), "--to", str(base), "--json", *FAST)
    assert code == 3, out + err
    decision = json.loads(out)
    checks = {c["check"]: c for c in decision["checks"]}
    assert checks["serves"]["verdict"] == "fail"
    assert checks["serves"]["summary"].startswith("did not load: ")
    assert not decision["promoted"] and decision["version"] is None
    assert _versions(base) == ["1"]


def test_a_hang_past_max_load_seconds_is_stopped(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    decision = promote(modules["same"], base, PromoteOptions(max_load_seconds=0.01, latency_calls=5))
    serves = decision.checks[2]
    assert serves.verdict == "fail" and serves.summary == "did not load: still loading after 0.01 s; stopped"


def test_killing_promote_while_publishing_leaves_no_partial_version(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    candidate = tmp_path / "big"
    shutil.copytree(modules["baseline"], candidate)
    with open(candidate / "assets" / "padding.bin", "wb") as handle:
        handle.truncate(0)
        handle.write(os.urandom(1 << 20) * 200)  # 200 MiB: copying and fsyncing takes a while
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tfship", "promote", str(candidate), "--to", str(base), *FAST],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("as fast"):
            break
    deadline = time.monotonic() + 60
    while not [p for p in base.iterdir() if p.name.startswith(".tfship-promote-")]:
        assert time.monotonic() < deadline and process.poll() is None, "publishing never started"
    process.send_signal(signal.SIGKILL)  # while it copies into the staging directory
    process.communicate()
    # whatever TF Serving can see is whole: version 1, and a version 2 only if it is complete
    assert _versions(base) in (["1"], ["1", "2"])
    if "2" in _versions(base):
        assert content_hash(base / "2") == content_hash(candidate)
    leftovers = [p for p in base.iterdir() if p.name.startswith(".tfship-promote-")]
    assert leftovers, "the kill came after publishing: the test did not test anything"
    # the next publish sweeps what the killed one left
    options = PromoteOptions(latency_calls=5, max_latency_ratio=100.0, batches=(1,))
    decision = promote(modules["same"], base, options)
    assert decision.promoted
    assert not [p for p in base.iterdir() if p.name.startswith(".tfship-promote-")]


def test_rollback_republishes_the_previous_version_with_a_record(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    options = PromoteOptions(max_diff=1, min_agreement=0, latency_calls=5, max_latency_ratio=100.0)
    decision = promote(modules["differs"], base, options)
    assert decision.promoted and decision.version == 2
    code, out, err = _run("--rollback", str(base))
    assert code == 0, out + err
    assert out.strip().splitlines()[-1] == f"rolled back: version 3 serves {base / '1'}"
    assert content_hash(base / "3") == content_hash(base / "1")
    record = json.loads((base / "3.promotion.json").read_text())
    assert record["action"] == "rollback" and record["checks"][0]["numbers"] == {"from": 2, "restores": 1}
    # rolling back again never brings back what was rolled back from (2), nor the served model (1)
    with pytest.raises(InputError, match="nothing to roll back to"):
        rollback(base)
    assert _versions(base) == ["1", "2", "3"]


def test_rollback_with_nothing_to_go_back_to_is_refused(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    code, out, err = _run("--rollback", str(base))
    assert code == 2
    assert err.strip() == (
        f"Error: {base}: no older version differs from version 1 and from what was "
        "rolled back; nothing to roll back to"
    )


def test_an_empty_base_path_has_no_baseline(modules, tmp_path: Path) -> None:
    base = tmp_path / "fresh"
    code, out, err = _run(str(modules["baseline"]), "--to", str(base), *FAST)
    assert code == 0, out + err
    lines = _lines(out)
    assert lines["compatible"] == "skip  no baseline"
    assert lines["as fast"] == "skip  no baseline"
    assert _versions(base) == ["1"]


def test_bad_inputs_are_refused_with_one_line(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    code, _, err = _run(str(base), "--to", str(base))
    assert (
        code == 2
        and err.strip()
        == f"Error: candidate {base}: not a SavedModel directory "
        "(no saved_model.pb); it holds versions 1: give one"
    )
    code, _, err = _run(str(modules["same"]), "--to", str(base), "--change", "accuracy")
    assert code == 2 and "'accuracy' is not METRIC>=VALUE" in err
    code, _, err = _run(str(modules["same"]))
    assert code == 2 and "give CANDIDATE and --to BASE_PATH" in err
    records = tmp_path / "records.jsonl"
    records.write_text('{"x": [1, 2, 3, 4]}\n{"x": [0, "one", 0, 1]}\n')
    code, _, err = _run(str(modules["same"]), "--to", str(base), "--requests", str(records), *FAST)
    assert code == 2 and err.startswith(f"Error: {records}:2: "), err
    assert _versions(base) == ["1"]


def test_a_tfrecord_of_prediction_logs_is_replayed_and_the_warmup_file_counted(
    modules, tmp_path: Path
) -> None:
    base = base_with(tmp_path, modules["baseline"])
    info = read_saved_model(modules["baseline"])
    requests = [example_request(info, batch=2, values={"x": [0.5, -1.0, 2.0, 0.0]}) for _ in range(3)]
    logs = tmp_path / "requests.tfrecord"
    write_warmup(logs, requests)
    candidate = Path(shutil.copytree(modules["baseline"], tmp_path / "candidate"))
    write_warmup(candidate / "assets.extra" / "tf_serving_warmup_requests", requests[:2])
    code, out, err = _run(str(candidate), "--to", str(base), "--requests", str(logs), "--dry-run", *FAST)
    assert code == 0, out + err
    serves = _lines(out)["serves"]
    assert "(2 warmup record(s) replayed)" in serves and f"answered 3/3 requests from {logs}" in serves
    assert f"6 rows from {logs}: agreement 100.00%" in _lines(out)["same answers"]


def test_fields_the_signature_does_not_take_are_named_in_a_note(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    records = tmp_path / "records.jsonl"
    records.write_text('{"x": [1, 2, 3, 4], "id": 7}\n{"x": [0, 1, 0, 1], "id": 8}\n')
    options = PromoteOptions(requests=records, latency_calls=5, max_latency_ratio=100.0, dry_run=True)
    decision = promote(modules["same"], base, options)
    assert decision.promoted
    assert decision.checks[2].notes == ["fields the signature does not take were ignored: id"]
    args = ["--requests", str(records), "--dry-run", *FAST]
    code, out, err = _run(str(modules["same"]), "--to", str(base), *args)
    assert code == 0, out + err
    assert "\n              note: fields the signature does not take were ignored: id\n" in out


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent has yet to collect it


def test_killing_promote_while_it_serves_leaves_no_server_running(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfship",
            "promote",
            str(modules["slower"]),
            "--to",
            str(base),
            "--latency-calls",
            "2000",
            "--batch",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("same answers"):  # both servers are up and timing has begun
            break
    servers = _children(process.pid)
    assert len(servers) == 2, servers
    workdirs = list(Path(tempfile.gettempdir()).glob(f"tfship-promoting-*-{process.pid}"))
    assert len(workdirs) == 1, workdirs
    process.send_signal(signal.SIGKILL)
    process.communicate()
    deadline = time.monotonic() + 2
    while any(_running(pid) for pid in servers):
        assert time.monotonic() < deadline, "a tfship serve outlived the promote that started it"
        time.sleep(0.05)
    assert workdirs[0].is_dir()  # a killed process removes nothing: the next run does
    options = PromoteOptions(latency_calls=2, max_latency_ratio=100.0, batches=(1,), dry_run=True)
    assert promote(modules["same"], base, options).promoted
    assert not workdirs[0].exists()


def _catches_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def test_killing_promote_while_its_servers_load_ends_them_at_once(modules, tmp_path: Path) -> None:
    # a server that has its SIGTERM handler in place but is still loading stops only once it has
    # loaded: the kill must not wait for that
    base = base_with(tmp_path, modules["baseline"])
    process = subprocess.Popen(
        [sys.executable, "-m", "tfship", "promote", str(modules["slower"]), "--to", str(base)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    servers: list[int] = []
    while len(servers) < 2 or not all(_catches_sigterm(pid) for pid in servers):
        assert time.monotonic() < deadline and process.poll() is None, "the servers never started"
        servers = _children(process.pid)
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    out, _ = process.communicate()
    assert not out.startswith("ready"), "promote got past loading: the test did not test anything"
    deadline = time.monotonic() + 2
    while any(_running(pid) for pid in servers):
        assert time.monotonic() < deadline, "a tfship serve outlived the promote that started it"
        time.sleep(0.05)


def test_without_requests_same_answers_says_it_compared_one_request_repeated(modules, tmp_path: Path) -> None:
    # 10 copies of one request agree all or not at all: the line must not pass that off as 10 rows
    base = base_with(tmp_path, modules["baseline"])
    code, out, err = _run(str(modules["same"]), "--to", str(base), "-n", "10", "--dry-run", *FAST)
    assert code == 0, out + err
    assert _lines(out)["same answers"].startswith(
        "pass  one request (the signature's defaults) repeated 10 times, not 10 distinct rows: "
        "agreement 100.00%"
    ), out
    assert _lines(out)["as fast"].startswith(
        "pass  one request (the signature's defaults) repeated to fill batches of 1, 32: batch 1: "
    ), out


@pytest.mark.estimator  # tiny_model's exports
def test_the_eval_rows_are_the_requests_when_none_are_given(tiny_model, tmp_path: Path) -> None:
    older, newer = (Path(p) for p in tiny_model.result.exports["latest"][-2:])
    base = base_with(tmp_path, older)
    code, out, err = _run(
        str(newer),
        "--to",
        str(base),
        "--eval",
        str(tiny_model.eval_csv),
        "--dry-run",
        "--max-diff",
        "1",
        "--min-agreement",
        "0",
        *FAST,
    )
    assert code == 0, out + err
    rows = min(100, len(tiny_model.eval_csv.read_text().splitlines()) - 1)
    source = f"the eval records of {tiny_model.eval_csv}, without their label 'species'"
    lines = _lines(out)
    assert f"answered {rows}/{rows} requests from {source}" in lines["serves"], out
    assert lines["same answers"].startswith(f"pass  {rows} rows from {source}: agreement "), out
    assert "repeated" not in lines["same answers"]


def test_a_report_that_cannot_be_written_after_publishing_is_a_warning(modules, tmp_path: Path) -> None:
    # the name fits, its temporary sibling's does not: the write fails after the version is out
    base = base_with(tmp_path, modules["baseline"])
    report = tmp_path / ("r" * 245 + ".html")
    code, out, err = _run(str(modules["same"]), "--to", str(base), "--report", str(report), *FAST)
    assert code == 0, out + err
    assert out.strip().splitlines()[-1] == f"promoted: version 2 at {base / '2'}"
    (warning,) = [line for line in err.splitlines() if line.startswith("warning: --report ")]
    assert warning.endswith("File name too long; version 2 was published all the same"), err
    assert _versions(base) == ["1", "2"]


def test_an_io_error_while_publishing_is_one_line_and_publishes_nothing(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    candidate = Path(shutil.copytree(modules["baseline"], tmp_path / "candidate"))
    dangling = candidate / "assets" / "vocabulary.txt"
    dangling.symlink_to(tmp_path / "gone.txt")  # copied by content: there is none to read
    code, out, err = _run(str(candidate), "--to", str(base), *FAST)
    assert code == 1, out + err
    assert err.splitlines() == [
        f"Error: {dangling}: [Errno 2] No such file or directory: '{dangling}'; nothing was published"
    ]
    assert "promoted:" not in out
    assert _versions(base) == ["1"] and not list(base.glob("2*"))


def test_a_served_model_stops_when_its_parent_dies_without_the_kernels_signal(
    modules, tmp_path: Path
) -> None:
    # the parent is a shell, not promote: no PR_SET_PDEATHSIG was asked for, only the child's
    # own watch of its parent can stop it
    base = base_with(tmp_path, modules["baseline"])
    started, pid_file = tmp_path / "started.json", tmp_path / "server.pid"
    script = (
        f'"{sys.executable}" -m tfship.cli.promote $$ serve --model-base-path "{base}" '
        f'--model-name m --port 0 --poll-seconds 0 --json >"{started}" 2>/dev/null & '
        f'echo $! >"{pid_file}"; exec sleep 120'
    )
    parent = subprocess.Popen(["sh", "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not started.is_file() or not started.read_text().endswith("\n"):
            assert time.monotonic() < deadline and parent.poll() is None, "the server never started"
            time.sleep(0.1)
        server = int(pid_file.read_text())
        assert _running(server)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 2
    while _running(server):
        assert time.monotonic() < deadline, "the served model outlived its parent"
        time.sleep(0.05)
