"""Files others read, written so that no reader ever sees half of one, and staging left behind.

A file is written to a hidden temporary sibling (same directory, so same file system) and
renamed onto its name only when complete: a reader sees the old file or the new one, never a
part. ``durable=True`` also fsyncs the file before the rename and the directory after it, for
the writes that must survive a power cut (what TF Serving is about to serve). A directory
built the same way (an export, a promoted copy) is staged under a name that ends with the
writing process's id, so the next run can tell a live writer's staging from a dead one's
(:func:`sweep_staging`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Flush a file or a directory (a rename in it) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class AtomicFile:
    """A temporary sibling of ``path``, renamed onto it by ``commit`` and removed by ``abort``.

    For writers that want a path (Parquet, TensorFlow's record writer) or a stream they close
    themselves; :func:`atomic_write` is the one-block form. The parent directory is created,
    and the file gets the mode ``open`` would give it.

    Example:
        >>> target = AtomicFile(Path("out") / "rows.txt")
        >>> _ = target.tmp.write_text("a\\n")
        >>> target.path.exists()
        False
        >>> target.commit()
        >>> target.path.read_text()
        'a\\n'
    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = False) -> None:
        self.path = Path(path)
        self.durable = durable
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:  # a name of our own: O_EXCL, so two writers never share a temporary
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
            try:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                continue
            break
        self.tmp = tmp

    def open(self) -> BinaryIO:
        """The temporary file, open for writing bytes (the caller closes it)."""
        return open(self.tmp, "wb")  # noqa: SIM115 - closed by the caller

    def commit(self) -> None:
        """Rename the (closed) temporary file onto ``path``; fsynced first when durable."""
        if self.durable:
            fsync_path(self.tmp)
        os.replace(self.tmp, self.path)
        if self.durable:
            fsync_path(self.path.parent)

    def abort(self) -> None:
        """Remove the temporary file; ``path`` is left as it was."""
        self.tmp.unlink(missing_ok=True)


@contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, durable: bool = False, **kwargs: Any
) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; renamed onto ``path`` when the block ends.

    An exception inside the block removes the temporary file and leaves ``path`` as it was.
    ``mode`` is ``"w"`` or ``"wb"``; ``kwargs`` go to ``open`` (``encoding``, ``newline``).

    Example:
        >>> with atomic_write("notes.json") as handle:
        ...     _ = handle.write('{"done": true}\\n')
        >>> Path("notes.json").read_text()
        '{"done": true}\\n'
    """
    target = AtomicFile(path, durable=durable)
    try:
        with open(target.tmp, mode, **kwargs) as handle:
            yield handle
        target.commit()
    except BaseException:
        target.abort()
        raise


def write_atomically(path: str | os.PathLike[str], data: str | bytes, *, durable: bool = False) -> None:
    """Write ``data`` (UTF-8 text, or bytes) to ``path`` through :func:`atomic_write`.

    Example:
        >>> write_atomically("page.html", "<p>ok</p>\\n")
        >>> Path("page.html").read_text()
        '<p>ok</p>\\n'
    """
    if isinstance(data, bytes):
        with atomic_write(path, "wb", durable=durable) as handle:
            handle.write(data)
    else:
        with atomic_write(path, "w", durable=durable, encoding="utf-8") as handle:
            handle.write(data)


def sweep_staging(base: Path, prefix: str, *, max_age: float | None = None) -> list[Path]:
    """Remove the staging directories under ``base`` whose writer is gone; return them.

    A staging directory's name starts with ``prefix`` and ends with ``-<pid>`` of the process
    writing it. One is stale when that process no longer exists (or the name carries no pid)
    and, when ``max_age`` is given, also when it was last touched more than ``max_age``
    seconds ago, whoever wrote it (a pid the system has since given to another process).

    Example:
        >>> base = Path("versions")
        >>> (base / ".staging-1-999999999").mkdir(parents=True)
        >>> [p.name for p in sweep_staging(base, ".staging-")]
        ['.staging-1-999999999']
    """
    removed: list[Path] = []
    if not base.is_dir():
        return removed
    for path in sorted(base.iterdir()):
        if path.name.startswith(prefix) and _is_stale(path, max_age):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _is_stale(path: Path, max_age: float | None) -> bool:
    if max_age is not None:
        try:
            if time.time() - path.stat().st_mtime > max_age:
                return True
        except OSError:
            return False  # gone already, or not ours to judge
    pid_text = path.name.rsplit("-", 1)[-1]
    return not pid_text.isdigit() or not _alive(int(pid_text))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or a number no process can have
        return False
    except PermissionError:  # another user's live process
        return True
    return True
