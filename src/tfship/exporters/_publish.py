"""Version directories, staging, sweeping and the per-version metadata file.

TF Serving treats a child of the base directory as a version only when its name is an integer,
and serves the largest. So an export is built under a non-numeric staging sibling and renamed
into place only when complete; a crash leaves at most a staging directory, swept later.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfship._files import sweep_staging as _sweep
from tfship._files import write_atomically
from tfship._interrupt import point_of_no_return
from tfship._wire import METADATA_FILE, version_numbers

logger = logging.getLogger("tfship.exporters")

STAGING_PREFIX = ".tfship-staging-"
_STALE_SECONDS = 6 * 3600


@dataclass(frozen=True)
class Version:
    """A published version directory and its ``tfship.json`` metadata (``{}`` if foreign).

    Example:
        >>> Version(Path("/x/17"), 17, {}).ours
        False
    """

    path: Path
    number: int
    metadata: dict[str, Any]

    @property
    def ours(self) -> bool:
        """Whether tfship wrote this version (it has a ``tfship.json``)."""
        return bool(self.metadata)


def next_version(base: Path, *, now: float | None = None) -> int:
    """``max(now_seconds, newest + 1)``: strictly increasing, never sleeping.

    Example:
        >>> next_version(Path("/nonexistent"), now=1700000000.5)
        1700000000
    """
    numbers = version_numbers(base)
    now_s = int(time.time() if now is None else now)
    return max(now_s, numbers[-1] + 1) if numbers else now_s


def read_metadata(version_dir: Path) -> dict[str, Any]:
    """The ``assets.extra/tfship.json`` of a version, or ``{}`` when absent or unreadable."""
    try:
        data = json.loads((version_dir / METADATA_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def published_versions(base: Path) -> list[Version]:
    """All numeric versions under ``base``, oldest first, with their metadata."""
    return [Version(base / str(n), n, read_metadata(base / str(n))) for n in version_numbers(base)]


def staging_dir(base: Path, version: int) -> Path:
    """The staging path of ``version``: a hidden, non-numeric sibling tagged with our pid."""
    return base / f"{STAGING_PREFIX}{version}-{os.getpid()}"


def sweep_staging(base: Path) -> list[Path]:
    """Remove staging directories left by dead processes (or older than six hours).

    Returns:
        The directories removed.
    """
    removed = _sweep(base, STAGING_PREFIX, max_age=_STALE_SECONDS)
    for path in removed:
        logger.info("swept stale staging directory %s", path.name)
    return removed


def publish(staging: Path, final: Path) -> None:
    """Rename a complete staging directory to its numeric name (atomic on a local disk).

    A Ctrl-C that arrived at any time before (even one some library swallowed) stops here,
    before the version becomes visible; one during the rename waits for it to end.
    """
    if final.exists():
        raise FileExistsError(f"version directory {final} already exists")
    with point_of_no_return():
        os.rename(staging, final)


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON to a temporary sibling, then rename it over ``path``."""
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def iter_exporter_dirs(root: Path) -> Iterator[Path]:
    """Exporter base directories under ``root`` (``root`` itself if it holds versions)."""
    if version_numbers(root):
        yield root
        return
    if root.is_dir():
        for child in sorted(root.iterdir()):
            if child.is_dir() and version_numbers(child):
                yield child
