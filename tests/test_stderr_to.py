"""Blocks that point file descriptor 2 elsewhere may overlap across threads (TensorFlow
imported quietly while Spark's JVM starts with its notices in a file); whatever order they
end in, stderr is the user's again after the last one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Two threads each point descriptor 2 at their own file; the one that entered first leaves
# first ("nested") or last ("crossed"); then a line written to descriptor 2 must reach the
# process's real stderr, and each file holds only what was written while it held stderr.
SCRIPT = r"""
import os, sys, threading
from tfship._tf import stderr_to

order, first_file, second_file = sys.argv[1:4]
entered, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

def hold(path, enter_after, leave_after, mine, text):
    if enter_after: enter_after.wait()
    with open(path, "wb") as f, stderr_to(f.fileno()):
        os.write(2, text)  # before telling the main thread, whose next write must come after it
        mine.set()
        leave_after.wait()

second_done = threading.Event()
a = threading.Thread(target=hold, args=(first_file, None, first_out, entered, b"first\n"))
a.start(); entered.wait()
if order == "crossed":   # the first one leaves while the second one still holds stderr
    b = threading.Thread(target=hold, args=(second_file, None, second_done, second_in, b"second\n"))
    b.start(); second_in.wait(); first_out.set(); a.join(); os.write(2, b"still hidden\n")
    second_done.set(); b.join()
else:                    # the second one enters and leaves inside the first
    b = threading.Thread(target=hold, args=(second_file, None, second_done, second_in, b"second\n"))
    b.start(); second_in.wait(); second_done.set(); b.join(); os.write(2, b"back to first\n")
    first_out.set(); a.join()
os.write(2, b"visible\n")
"""


@pytest.mark.parametrize("order", ["crossed", "nested"])
def test_overlapping_redirections_give_stderr_back(order: str, tmp_path: Path) -> None:
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, order, str(first), str(second)],
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b"visible\n"
    if order == "crossed":
        assert first.read_bytes() == b"first\n"
        assert second.read_bytes() == b"second\nstill hidden\n"
    else:
        assert first.read_bytes() == b"first\nback to first\n"
        assert second.read_bytes() == b"second\n"
