"""The exporters' step of ``tfship demo``: list each export version with its metadata."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfship.exporters._publish import iter_exporter_dirs, list_versions

_SHOWN_METRICS = ("auc", "accuracy", "loss", "average_loss")


def describe_exports(export_root: Path, echo: Callable[[str], None]) -> None:
    """Print every version under ``export_root`` with a summary of its ``tfship.json``.

    ``export_root`` is ``<model_dir>/export`` (one directory per exporter) or one exporter's
    base directory.

    Example:
        >>> describe_exports(Path("model/export"), print)  # doctest: +SKIP
        best  (ranks by auc, max; best 0.912 at version 1795239399)
          1795239399  step 400  auc 0.912  loss 0.3666  signatures 4 (classification, ...)  ...
    """
    bases = list(iter_exporter_dirs(Path(export_root)))
    if not bases:
        echo(f"no export versions under {export_root}")
        return
    for base in bases:
        echo(_header(base))
        for version in list_versions(base):
            echo("  " + _line(version.number, version.metadata))


def _header(base: Path) -> str:
    record_path = base / "tfship-best.json"
    if not record_path.exists():
        return base.name
    try:
        record = json.loads(record_path.read_text())
    except ValueError:
        return base.name
    return (
        f"{base.name}  (ranks by {record.get('metric')}, {record.get('mode')}; "
        f"best {_num(record.get('value'))} at version {record.get('version')})"
    )


def _line(number: int, meta: dict[str, Any]) -> str:
    if not meta:
        return f"{number}  (no tfship.json: not written by tfship)"
    metrics = meta.get("metrics") or {}
    shown = [f"{k} {_num(metrics[k])}" for k in _SHOWN_METRICS if k in metrics]
    sigs = meta.get("signatures", {}).get("written", {})
    warm = (meta.get("warmup") or {}).get("records", 0)
    parts = [
        str(number),
        f"step {meta.get('global_step')}",
        *shown,
        f"signatures {len(sigs)} ({', '.join(sorted(sigs))})",
        f"warmup {warm}",
        f"receiver {meta.get('receiver', {}).get('kind', '?')}",
        f"created {meta.get('created', '?')}",
    ]
    return "  ".join(parts)


def _num(value: Any) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)
