"""Publishing a version TF Serving can never see half of, its decision record, and rollback.

The copy is made in a hidden, non-numeric staging directory inside the base path (so on the
same file system), every file and directory is fsynced, and only then is it renamed to the
next integer name: TF Serving considers integer names only, so it sees nothing or all of it.
A process killed while copying leaves only the staging directory, swept by the next run.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tfship._files import fsync_path, write_atomically
from tfship._files import sweep_staging as _sweep
from tfship._interrupt import check as interrupt_check
from tfship._wire import version_numbers
from tfship.errors import InputError, TfshipError

logger = logging.getLogger(__name__)

STAGING_PREFIX = ".tfship-promote-"
RECORD_SUFFIX = ".promotion.json"


def record_path(base: Path, number: int) -> Path:
    """Where the decision record of version ``number`` lives: a non-numeric sibling file."""
    return base / f"{number}{RECORD_SUFFIX}"


def read_record(base: Path, number: int) -> dict[str, Any] | None:
    """The decision record of a version, or ``None`` when it was not published by ``promote``."""
    try:
        data = json.loads(record_path(base, number).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def now_text() -> str:
    """The current UTC time, as records write it."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def sweep_staging(base: Path) -> list[Path]:
    """Remove staging directories whose process is gone, however old a live one's; returns them.

    Unlike an export's staging (swept after six hours whoever holds it), a copy being
    promoted is never taken from a live process: copying a large model may take that long.
    """
    return _sweep(base, STAGING_PREFIX)


def _fsync_tree(root: Path) -> None:
    for directory, _, files in os.walk(root):
        for name in files:
            fsync_path(Path(directory) / name)
        fsync_path(Path(directory))


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", durable=True)


def publish_copy(source: Path, base: Path, record: dict[str, Any]) -> tuple[int, Path]:
    """Copy ``source`` into ``base`` as its next version, with ``record`` beside it.

    Returns:
        The version number and its directory.

    Raises:
        TfshipError: a file could not be read or written (the path and the cause, in one
            line); nothing was published then.
    """
    try:
        return _publish_copy(source, base, record)
    except OSError as exc:
        raise TfshipError(f"{io_failure(exc)}; nothing was published") from None


def io_failure(exc: OSError) -> str:
    """``path: cause`` of an I/O error (the first file a copy failed on).

    Example:
        >>> io_failure(PermissionError(13, "Permission denied", "serving/m"))
        'serving/m: Permission denied'
    """
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        source, _, why = exc.args[0][0]  # copytree's list of (source, destination, cause)
        return f"{source}: {why}"
    where = exc.filename if exc.filename is not None else "a file"
    return f"{where}: {exc.strerror or exc}"


def _publish_copy(source: Path, base: Path, record: dict[str, Any]) -> tuple[int, Path]:
    base.mkdir(parents=True, exist_ok=True)
    sweep_staging(base)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, suffix=f"-{os.getpid()}", dir=base))
    try:
        tree = staging / "version"
        shutil.copytree(source, tree, symlinks=False)
        _fsync_tree(tree)
        numbers = version_numbers(base)
        number = numbers[-1] + 1 if numbers else 1
        while (base / str(number)).exists():
            number += 1
        final = base / str(number)
        record = {**record, "version": number, "path": str(final)}
        _write_json(record_path(base, number), record)  # first: a version never lacks its record
        interrupt_check()  # a Ctrl-C at any time before stops here, before the version is visible
        try:
            os.rename(tree, final)
        except OSError:
            record_path(base, number).unlink(missing_ok=True)  # no record of what was not published
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    try:
        fsync_path(base)
    except OSError as exc:  # published all the same: say so, and what was not made durable
        logger.warning(
            "warning: version %d was published, but %s could not be flushed to the disk: %s",
            number,
            base,
            exc.strerror or exc,
        )
    return number, final


def _rolled_back_from(base: Path, numbers: list[int]) -> set[int]:
    found = set()
    for number in numbers:
        record = read_record(base, number) or {}
        if record.get("action") == "rollback":
            for check in record.get("checks", []):
                rolled = check.get("numbers", {}).get("from")
                if isinstance(rolled, int):
                    found.add(rolled)
    return found


def previous_version(base: Path) -> tuple[int, int]:
    """The newest version and the one to restore: the newest older one whose contents differ
    from the newest's and from every version a rollback replaced (so rolling back twice goes
    further back, never to what was rolled back from).

    Raises:
        InputError: no older version qualifies.
    """
    from tfship.inspect import content_hash

    numbers = version_numbers(base)
    if not numbers:
        raise InputError(f"{base}: no versions to roll back")
    newest = numbers[-1]
    hashes = {n: content_hash(base / str(n)) for n in numbers}
    refused = {hashes[newest]} | {hashes[n] for n in _rolled_back_from(base, numbers) if n in hashes}
    for number in reversed(numbers[:-1]):
        if hashes[number] not in refused:
            return newest, number
    raise InputError(
        f"{base}: no older version differs from version {newest} and from what was rolled back; "
        "nothing to roll back to"
    )
