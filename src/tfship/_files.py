"""Files others read, written so that no reader ever sees half of one, and staging left behind.

A file is written to a hidden temporary sibling (same directory, so same file system) and
renamed onto its name only when complete: a reader sees the old file or the new one, never a
part. ``durable=True`` also fsyncs the file before the rename and the directory after it, for
the writes that must survive a power cut (what TF Serving is about to serve). A directory
built the same way (an export, a promoted copy) is staged under a name that ends with the
writing process's id, so the next run can tell a live writer's staging from a dead one's
(:func:`sweep_staging`). A temporary file is locked by its writer while it is open; the next
writer of the same name removes the temporaries whose lock is free, left by a writer that was
killed or failed before it could clean up.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; a temporary is judged by its writer's pid only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)
#: a temporary left by a writer that holds no lock on it and is this old is stale whatever its pid
#: says (a pid the system has since given to another process)
STALE_TEMPORARY_SECONDS = 60.0


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
        with errors_name(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            sweep_temporaries(self.path)
            fd, tmp = self._create()
        self.tmp = tmp
        # Held until commit or abort; the kernel lets it go when the process dies, which is how
        # the next writer tells a dead writer's temporary from a live one's.
        self._lock: int | None = fd
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:  # no lock to hold (and an open file could not be renamed there)
            self._unlock()

    def _create(self) -> tuple[int, Path]:
        while True:  # a name of our own: O_EXCL, so two writers never share a temporary
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
            try:
                return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
            except FileExistsError:
                continue

    def open(self) -> BinaryIO:
        """The temporary file, open for writing bytes (the caller closes it)."""
        return open(self.tmp, "wb")  # noqa: SIM115 - closed by the caller

    def commit(self) -> None:
        """Rename the (closed) temporary file onto ``path``; fsynced first when durable."""
        with errors_name(self.path):
            if self.durable:
                fsync_path(self.tmp)
            os.replace(self.tmp, self.path)
        self._unlock()
        if self.durable:
            fsync_path(self.path.parent)

    def abort(self) -> None:
        """Remove the temporary file; ``path`` is left as it was."""
        try:
            self.tmp.unlink(missing_ok=True)
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def sweep_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporaries of ``path`` (``.<name>.<pid>-<hex>.tmp`` beside it) whose writer
    is gone; return them. Nothing else is touched, and each removal is logged.

    A writer holds a lock on its temporary until it commits or aborts: a temporary is stale
    when its lock is free and its writer's pid is gone, or it is older than
    ``STALE_TEMPORARY_SECONDS`` (the pid was given to another process).

    Example:
        >>> _ = Path(".rows.csv.999999999-0a1b2c3d.tmp").write_text("half")
        >>> [p.name for p in sweep_temporaries("rows.csv")]
        ['.rows.csv.999999999-0a1b2c3d.tmp']
    """
    target = Path(path)
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)-[0-9a-f]{{8}}\.tmp")
    removed: list[Path] = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in sorted(names):
        found = pattern.fullmatch(name)
        if found is not None and _remove_if_stale(target.parent / name, int(found.group(1))):
            log.info("removed %s, a temporary file left by a writer that is gone", target.parent / name)
            removed.append(target.parent / name)
    return removed


def _remove_if_stale(tmp: Path, pid: int) -> bool:
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False  # gone already, or not ours to judge
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # its writer is alive and holds it
            old = time.time() - os.fstat(fd).st_mtime > STALE_TEMPORARY_SECONDS
            if _alive(pid) and not old:
                return False  # a writer between creating its temporary and locking it
        elif _alive(pid):
            return False
        tmp.unlink(missing_ok=True)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@contextmanager
def errors_name(path: str | os.PathLike[str]) -> Iterator[None]:
    """An ``OSError`` inside names ``path``, the file the user gave, where it named none or a
    temporary of ours (a full disk found while closing a stream names no file).

    Example:
        >>> with errors_name("out/rows.csv"):
        ...     raise OSError(28, "No space left on device")
        Traceback (most recent call last):
        OSError: [Errno 28] No space left on device: 'out/rows.csv'
    """
    try:
        yield
    except OSError as exc:
        named = exc.filename
        if named is not None and not Path(os.fsdecode(named)).name.endswith(".tmp"):
            raise
        # the system's words for the errno: a library's own text wraps them (pyarrow: "Error
        # writing bytes to file. Detail: [errno 28] No space left on device")
        cause = os.strerror(exc.errno) if isinstance(exc.errno, int) else exc.strerror or str(exc)
        raise OSError(exc.errno, cause, os.fspath(path)) from exc  # the errno picks the subclass


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
