"""Publishing a job's files: written under a temporary name, renamed into place when done.

A reader never sees half a file: every file a batch job writes (the output, the rejects) is a
:class:`Published` file, ``finish`` ed (closed, where a full disk shows), then ``commit`` ted
(renamed into place), or ``abort`` ed (its temporary removed, an old file left as it was). The
output path ``-`` is standard output, where rows go out as they are written.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy.typing as npt

from tfship._files import AtomicFile
from tfship.errors import InputError

Array = npt.NDArray[Any]

#: the output path that means standard output, as for most command-line tools.
STDOUT = "-"


def is_stdout(path: Path | str) -> bool:
    """Whether ``path`` is ``-``, standard output."""
    return str(path) == STDOUT


class _Borrowed(io.RawIOBase):
    """Standard output lent to a writer: its ``close`` flushes and leaves the stream open."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self.stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.stream.write(data)
        return len(data)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        if not self.closed:
            self.stream.flush()
        super().close()


class StdoutFile:
    """Standard output where an ``AtomicFile`` would be: rows go out as they are written."""

    path = Path(STDOUT)

    def open(self) -> BinaryIO:
        return _Borrowed(sys.stdout.buffer)  # type: ignore[return-value]

    def commit(self) -> None:
        sys.stdout.flush()

    def abort(self) -> None:
        sys.stdout.flush()


class Published:
    """A file of a job: ``finish`` then ``commit`` (``close`` does both), or ``abort``."""

    file: AtomicFile | StdoutFile

    @property
    def path(self) -> Path:
        """The file the user named (``-`` for standard output)."""
        return self.file.path

    def finish(self) -> None:
        """Flush and close the underlying stream (before the rename)."""

    def commit(self) -> None:
        """Rename the finished file into place."""
        self.file.commit()

    def close(self) -> None:
        self.finish()
        self.commit()

    def abort(self) -> None:
        """Remove the temporary file, even when closing it fails too (a full disk)."""
        try:
            with contextlib.suppress(Exception):  # the error that made us abort is the one to report
                self.finish()
        finally:
            self.file.abort()


class Writer(Published):
    """Base of the output writers: ``write`` chunks in order, then ``close`` (or ``abort``).

    The path ``-`` is standard output (JSONL and CSV only).
    """

    def __init__(self, path: Path) -> None:
        self.file = StdoutFile() if is_stdout(path) else AtomicFile(path)
        self.rows = 0

    @property
    def tmp(self) -> Path:
        """The temporary file of a writer that writes by path (not to standard output)."""
        if not isinstance(self.file, AtomicFile):
            raise InputError(f"{type(self).__name__} cannot write to standard output")
        return self.file.tmp

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        raise NotImplementedError


class RejectsWriter(Published):
    """The rejects file: one JSON object per rejected row (file, line, reason, record)."""

    def __init__(self, path: Path) -> None:
        self.file = AtomicFile(path)
        try:
            self.stream = open(self.file.tmp, "w", encoding="utf-8")  # noqa: SIM115
        except BaseException:
            self.file.abort()
            raise

    def write(self, reject: Any) -> None:
        self.stream.write(json.dumps(reject.to_dict(), ensure_ascii=False) + "\n")

    def finish(self) -> None:
        self.stream.close()
