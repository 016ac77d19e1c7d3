"""The foundation's writes others read (``tfship._files``): whole or not at all, and staging swept."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfship._files import AtomicFile, atomic_write, sweep_staging, write_atomically


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_block_that_ends_replaces_the_file(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "notes.json"  # the parent is made
    with atomic_write(target) as handle:
        handle.write("half")
        assert not target.exists()  # nothing visible until the block ends
        handle.write(" and the rest\n")
    assert target.read_text() == "half and the rest\n"
    with atomic_write(target, "wb") as handle:
        handle.write(b"\x00new")
    assert target.read_bytes() == b"\x00new"
    assert sorted(p.name for p in target.parent.iterdir()) == ["notes.json"]


def test_an_error_in_the_block_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "rejects.jsonl"
    target.write_text("old\n")
    with pytest.raises(RuntimeError, match="stop"), atomic_write(target) as handle:
        handle.write("new, half written")
        raise RuntimeError("stop")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["rejects.jsonl"]


def test_the_file_gets_the_mode_open_gives(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        write_atomically(tmp_path / "a.txt", "x", durable=True)
        (tmp_path / "b.txt").write_text("x")
    finally:
        os.umask(previous)
    modes = {name: stat.S_IMODE((tmp_path / name).stat().st_mode) for name in ("a.txt", "b.txt")}
    assert modes == {"a.txt": 0o640, "b.txt": 0o640}


def test_text_is_utf8_and_bytes_are_kept(tmp_path: Path) -> None:
    write_atomically(tmp_path / "page.html", "<p>Adélie</p>")
    assert (tmp_path / "page.html").read_bytes() == "<p>Adélie</p>".encode()
    write_atomically(tmp_path / "raw.bin", b"\xff\x00")
    assert (tmp_path / "raw.bin").read_bytes() == b"\xff\x00"


def test_two_writers_of_one_name_never_share_a_temporary(tmp_path: Path) -> None:
    first, second = AtomicFile(tmp_path / "out.csv"), AtomicFile(tmp_path / "out.csv")
    assert first.tmp != second.tmp and first.tmp.parent == tmp_path
    with first.open() as stream:
        stream.write(b"first\n")
    with second.open() as stream:
        stream.write(b"second\n")
    second.commit()
    first.abort()
    assert (tmp_path / "out.csv").read_bytes() == b"second\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_sweep_removes_the_staging_of_processes_that_are_gone(tmp_path: Path) -> None:
    dead, mine = _dead_pid(), os.getpid()
    for name in (f".stage-7-{dead}", f".stage-8-{mine}", ".stage-no-pid", f"7-{dead}", f".other-{dead}"):
        (tmp_path / name).mkdir()
    removed = sweep_staging(tmp_path, ".stage-")
    assert sorted(p.name for p in removed) == [f".stage-7-{dead}", ".stage-no-pid"]
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == sorted([f".stage-8-{mine}", f"7-{dead}", f".other-{dead}"])
    assert sweep_staging(tmp_path / "absent", ".stage-") == []


def test_sweep_with_an_age_removes_old_staging_of_live_processes_too(tmp_path: Path) -> None:
    old, young = tmp_path / f".stage-1-{os.getpid()}", tmp_path / f".stage-2-{os.getpid()}"
    old.mkdir()
    young.mkdir()
    hours_ago = time.time() - 7 * 3600
    os.utime(old, (hours_ago, hours_ago))
    assert sweep_staging(tmp_path, ".stage-") == []  # no age rule: a live writer keeps its own
    assert sweep_staging(tmp_path, ".stage-", max_age=6 * 3600) == [old]
    assert young.is_dir()


def _killed_writer(target: Path, *, hold: bool = False) -> subprocess.Popen[bytes] | None:
    """A real writer of ``target`` in another process: killed with its temporary half written,
    or (``hold``) alive and writing until the caller kills it."""
    code = (
        "import os, sys, time\n"
        "from tfship._files import AtomicFile\n"
        f"target = AtomicFile({str(target)!r})\n"
        "target.tmp.write_bytes(b'half a file')\n"
        "print(target.tmp, flush=True)\n"
        f"time.sleep(60) if {hold} else os.kill(os.getpid(), 9)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert child.stdout is not None
    child.stdout.readline()  # its temporary exists
    child.stdout.close()
    if hold:
        return child
    child.wait()
    return None


def test_a_killed_writers_temporary_is_removed_by_the_next_writer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "preds.csv"
    unrelated = [".other.csv.12-0a1b2c3d.tmp", ".preds.csv.old", "preds.csv.12-0a1b2c3d.tmp"]
    for name in unrelated:
        (tmp_path / name).write_text("not ours to remove")
    for _ in range(3):  # each killed run leaves its own temporary and removes the one before
        _killed_writer(target)
        assert len(list(tmp_path.glob(".preds.csv.*.tmp"))) == 1
    with caplog.at_level("INFO", logger="tfship._files"):
        write_atomically(target, "new\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*unrelated, "preds.csv"])
    assert "a temporary file left by a writer that is gone" in caplog.text


def test_a_live_writers_temporary_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "preds.csv"
    child = _killed_writer(target, hold=True)
    assert child is not None
    try:
        live = next(tmp_path.glob(".preds.csv.*.tmp"))
        hours_ago = time.time() - 7 * 3600  # even old: its writer still holds it
        os.utime(live, (hours_ago, hours_ago))
        write_atomically(target, "new\n")
        assert live.exists()
    finally:
        child.kill()
        child.wait()
    write_atomically(target, "again\n")
    assert not live.exists()


def test_an_unlocked_temporary_whose_pid_was_given_to_another_process_goes_when_old(tmp_path: Path) -> None:
    # A dead writer's pid now names a live process (here: the test's own parent).
    young = tmp_path / f".preds.csv.{os.getppid()}-0a1b2c3d.tmp"
    old = tmp_path / f".preds.csv.{os.getppid()}-4e5f6a7b.tmp"
    young.write_text("half")
    old.write_text("half")
    hours_ago = time.time() - 7 * 3600
    os.utime(old, (hours_ago, hours_ago))
    write_atomically(tmp_path / "preds.csv", "new\n")
    assert young.exists() and not old.exists()


def test_errors_name_the_users_file_not_a_temporary(tmp_path: Path) -> None:
    from tfship._files import errors_name

    with pytest.raises(OSError, match="No space left") as caught, errors_name(tmp_path / "p.csv"):
        raise OSError(28, "No space left on device")
    assert caught.value.filename == str(tmp_path / "p.csv")
    with pytest.raises(PermissionError) as denied, errors_name(tmp_path / "p.csv"):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".p.csv.1-0a1b2c3d.tmp"))
    assert denied.value.filename == str(tmp_path / "p.csv")
    with pytest.raises(FileNotFoundError) as other, errors_name(tmp_path / "p.csv"):
        raise FileNotFoundError(2, "No such file or directory", "rows.csv")
    assert other.value.filename == "rows.csv"  # a file the error already names is kept
