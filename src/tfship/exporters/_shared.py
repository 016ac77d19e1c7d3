"""What other tfship packages need of ``exporters`` and a user does not: its door to them.

The exporters the trainer attaches, and the checkpoint and receiver lookups of ``tfship
export``. A module of another package imports these here, never
from the modules that define them; none of them is public API. The exporters' modules import
TensorFlow, so ``standard_exporters`` loads on first use, as the package's own do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfship.exporters._events import resolve_mode
from tfship.exporters._export import checkpoint_step, resolve_checkpoint
from tfship.exporters._receivers import build_receiver

if TYPE_CHECKING:
    from tfship.exporters._standard import standard_exporters

__all__ = [
    "build_receiver",
    "checkpoint_step",
    "resolve_checkpoint",
    "resolve_mode",
    "standard_exporters",
]


def __getattr__(name: str) -> Any:
    if name == "standard_exporters":
        from tfship.exporters import _standard

        return _standard.standard_exporters
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
