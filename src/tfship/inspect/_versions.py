"""The versions under a model base path, and the one TF Serving's default policy would serve.

TF Serving watches a base path and treats every subdirectory whose name is a non-negative
integer as a version; its default version policy (``latest``, one version) serves the highest
number. Anything else (``temp-...`` staging directories, files) is ignored.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any

from tfship._wire import METADATA_FILE, version_number
from tfship.errors import ModelError, TfshipError
from tfship.inspect._bundle import variables_problems
from tfship.inspect._describe import variables
from tfship.inspect._reader import SAVED_MODEL_PB, SAVED_MODEL_PBTXT, read_saved_model


@dataclass(frozen=True)
class VersionInfo:
    """One numeric version directory.

    Attributes:
        number: the version number (the directory name).
        path: the directory.
        created: creation time (Unix seconds): from ``tfship.json`` when present, else mtime.
        size_bytes: total size of the files in the directory.
        has_saved_model: whether it holds ``saved_model.pb`` or ``saved_model.pbtxt``.
        metrics: evaluation metrics recorded by the exporter (``{}`` when unknown).
        exporter: the exporter that wrote it (``{}`` when unknown, e.g. ``{"name": "best"}``).

    Example:
        >>> VersionInfo(3, pathlib.Path("m/3"), 0.0, 10, True).created_iso
        '1970-01-01T00:00:00+00:00'
    """

    number: int
    path: pathlib.Path
    created: float
    size_bytes: int
    has_saved_model: bool
    metrics: dict[str, Any] = field(default_factory=dict)
    exporter: dict[str, Any] = field(default_factory=dict)

    @property
    def created_iso(self) -> str:
        """``created`` as an ISO-8601 UTC timestamp (seconds)."""
        stamp = _dt.datetime.fromtimestamp(self.created, _dt.timezone.utc)
        return stamp.isoformat(timespec="seconds")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "version": self.number,
            "path": str(self.path),
            "created": self.created_iso,
            "size_bytes": self.size_bytes,
            "has_saved_model": self.has_saved_model,
            "metrics": self.metrics,
            "exporter": self.exporter,
        }


@dataclass(frozen=True)
class VersionsReport:
    """What ``versions`` found under a base path.

    Attributes:
        base: the model base path.
        versions: numeric versions, lowest first.
        ignored: non-numeric entries with the reason TF Serving ignores them.
        served: the version TF Serving's default policy (latest) would serve, or ``None``
            (no versions, or the newest one cannot load).
        unloadable: why the newest version cannot load (TF Serving would serve nothing), or
            ``None``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> tf.saved_model.save(m, "m/2", signatures=m.f)
        >>> report = list_versions("m")
        >>> report.served
        2
    """

    base: pathlib.Path
    versions: list[VersionInfo]
    ignored: list[tuple[str, str]]
    served: int | None
    unloadable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (schema ``tfship.inspect.versions`` version 1)."""
        return {
            "schema": "tfship.inspect.versions",
            "version": 1,
            "base": str(self.base),
            "policy": "latest",
            "served": self.served,
            "unloadable": self.unloadable,
            "versions": [v.to_dict() for v in self.versions],
            "ignored": [{"name": n, "reason": r} for n, r in self.ignored],
        }


def _size(path: pathlib.Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:  # a file removed while we walk (a concurrent gc)
                continue
    return total


def _metadata(path: pathlib.Path) -> dict[str, Any]:
    try:
        data = json.loads((path / METADATA_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _version(number: int, path: pathlib.Path) -> VersionInfo:
    meta = _metadata(path)
    created = meta.get("created_unix")
    if not isinstance(created, (int, float)):
        created = path.stat().st_mtime
    exporter = meta.get("exporter")
    metrics = meta.get("metrics")
    return VersionInfo(
        number=number,
        path=path,
        created=float(created),
        size_bytes=_size(path),
        has_saved_model=any((path / f).is_file() for f in (SAVED_MODEL_PB, SAVED_MODEL_PBTXT)),
        metrics=metrics if isinstance(metrics, dict) else {},
        exporter=exporter if isinstance(exporter, dict) else {},
    )


def list_versions(base: str | os.PathLike[str]) -> VersionsReport:
    """List the versions under a model base path as TF Serving sees them.

    Raises:
        ModelError: the base path does not exist, is a file, or is itself a version directory.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> tf.saved_model.save(m, "m/7", signatures=m.f)
        >>> [v.number for v in list_versions("m").versions]
        [1, 7]
    """
    root = pathlib.Path(base)
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is a file, not a directory"
        raise ModelError(f"model base path {str(root)!r} {what}", path=str(root))
    if any((root / f).is_file() for f in (SAVED_MODEL_PB, SAVED_MODEL_PBTXT)):
        raise ModelError(
            f"{str(root)!r} is a SavedModel itself, not a base path of versions; "
            f"pass its parent {str(root.parent)!r}",
            path=str(root),
        )
    versions: list[VersionInfo] = []
    ignored: list[tuple[str, str]] = []
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if not entry.is_dir():
            ignored.append((entry.name, "a file, not a version directory"))
        elif (number := version_number(entry.name)) is None:
            ignored.append((entry.name, "not a number"))
        else:
            versions.append(_version(number, entry))
    versions.sort(key=lambda v: v.number)
    problem = _load_problem(versions[-1]) if versions else None
    served = versions[-1].number if versions and problem is None else None
    return VersionsReport(root, versions, ignored, served, problem)


def _load_problem(version: VersionInfo) -> str | None:
    """Why TF Serving could not load this version (read from the protos), or ``None``."""
    if not version.has_saved_model:
        return "it holds no saved_model.pb"
    try:
        info = read_saved_model(version.path)
    except TfshipError as exc:
        return str(exc)
    problems = variables_problems(version.path, variables(info)["count"])
    return problems[0] if problems else None


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _metrics_text(metrics: dict[str, Any], limit: int = 4) -> str:
    items = [f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items()]
    return " ".join(items[:limit]) + (" ..." if len(items) > limit else "")


def render_versions(report: VersionsReport) -> str:
    """Human-readable table of a :class:`VersionsReport`."""
    rows = [("", "VERSION", "CREATED (UTC)", "SIZE", "EXPORTER", "METRICS")]
    for v in report.versions:
        mark = "*" if v.number == report.served else ""
        exporter = str(v.exporter.get("name", "")) if v.exporter else ""
        if not v.has_saved_model:
            exporter = (exporter + " (no saved_model.pb)").strip()
        rows.append(
            (
                mark,
                str(v.number),
                v.created_iso.replace("T", " ")[:19],
                _human_size(v.size_bytes),
                exporter or "-",
                _metrics_text(v.metrics) or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    if not report.versions:
        lines = [f"no numeric version directories under {report.base}"]
    if report.served is not None:
        lines.append(f"TF Serving's default policy (latest) serves version {report.served}.")
    elif report.versions:
        newest = report.versions[-1].number
        lines.append(
            f"TF Serving's default policy (latest) would load version {newest}, which cannot load "
            f"({report.unloadable}): no version is served."
        )
    for name, reason in report.ignored:
        lines.append(f"ignored: {name} ({reason})")
    return "\n".join(lines) + "\n"
