"""A directory no one can write in, for the tests of I/O errors.

As root (CI) file modes do not stop a write, so it is a read-only tmpfs mounted for the test
(the error: "Read-only file system"); as a user it is a directory of mode 0555 ("Permission
denied"). Either way the write fails in the kernel, as it would for a user.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: the cause the error names for a write in :func:`read_only_dir`
CAUSE = "Read-only file system" if os.geteuid() == 0 else "Permission denied"


@contextmanager
def read_only_dir(place: Path) -> Iterator[Path]:
    """``place``, made and unwritable inside the block."""
    place.mkdir()
    if os.geteuid() != 0:
        place.chmod(0o555)
        try:
            yield place
        finally:
            place.chmod(0o755)
        return
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tfship-test", str(place)], check=True)
    try:
        yield place
    finally:
        subprocess.run(["umount", str(place)], check=True)
