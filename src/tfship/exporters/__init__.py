"""Export Estimator checkpoints as SavedModels that TF Serving can trust.

Receivers from one schema (``parsing_receiver``, ``raw_receiver``, ``both_receiver``), an export
function that stages, verifies and publishes (``export_model``), and drop-in exporters for
``tf.estimator.EvalSpec(exporters=...)``: ``LatestExporter``, ``FinalExporter`` and a
restart-safe ``BestExporter``.

Importing this package is cheap: TensorFlow loads on first use of a name below. The receivers,
``export_model`` and the exporters need ``tf.estimator`` (the ``estimator`` extra, TensorFlow
2.15) and say so in one line on a newer TensorFlow; ``check_runs`` and ``verify_export`` run an
export on any TensorFlow.

Example:
    >>> from tfship.exporters import BestExporter, parsing_receiver
    >>> from tfship.schema import Schema
    >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
    ...                           "features": [{"name": "x"}]})
    >>> best = BestExporter("best", parsing_receiver(schema), metric="auc", mode="max")

    or with ``tf.estimator.BestExporter``'s own keywords, for any receiver function:

    >>> best = BestExporter(name="best", serving_input_receiver_fn=parsing_receiver(schema),
    ...                     exports_to_keep=1)
"""

from __future__ import annotations

from tfship._tf import require_extra as _require_extra

_require_extra(__name__)  # one line naming the run extra, before a submodule fails to import TensorFlow

import importlib
from typing import TYPE_CHECKING, Any

from tfship._deprecated import OldNames
from tfship.exporters._errors import CheckpointNotFoundError, MetricNotFoundError, VerificationError
from tfship.exporters._events import EvalRecord, best_checkpoint, read_eval_history
from tfship.exporters._export import ExportResult, check_runs, export_model, verify_export
from tfship.exporters._publish import Version, published_versions
from tfship.exporters._receivers import Receiver, both_receiver, parsing_receiver, raw_receiver
from tfship.exporters._signatures import SignatureReport

if TYPE_CHECKING:  # their modules derive from tf.estimator.Exporter, so they import TensorFlow
    from tfship.exporters._base import ExportDecision
    from tfship.exporters._best import BestExporter
    from tfship.exporters._final import FinalExporter
    from tfship.exporters._latest import LatestExporter
    from tfship.exporters._standard import run_final_exports

# The names whose modules import TensorFlow, each with its module: loaded on first use.
_NEEDS_TENSORFLOW = {
    "BestExporter": "_best",
    "ExportDecision": "_base",
    "FinalExporter": "_final",
    "LatestExporter": "_latest",
    "run_final_exports": "_standard",
}

# Earlier spellings: renamed, or public before and now what other tfship packages import from
# ``tfship.exporters._shared``.
_OLD = OldNames(
    __name__,
    renamed={"Decision": "tfship.exporters.ExportDecision"},
    withdrawn={
        name: f"tfship.exporters._shared.{name}"
        for name in (
            "build_receiver",
            "checkpoint_step",
            "resolve_checkpoint",
            "resolve_mode",
            "standard_exporters",
        )
    },
)

__all__ = [
    "BestExporter",
    "CheckpointNotFoundError",
    "EvalRecord",
    "ExportDecision",
    "ExportResult",
    "FinalExporter",
    "LatestExporter",
    "MetricNotFoundError",
    "Receiver",
    "SignatureReport",
    "VerificationError",
    "Version",
    "best_checkpoint",
    "both_receiver",
    "check_runs",
    "export_model",
    "parsing_receiver",
    "published_versions",
    "raw_receiver",
    "read_eval_history",
    "run_final_exports",
    "verify_export",
]


def __getattr__(name: str) -> Any:
    if name in _NEEDS_TENSORFLOW:
        module = importlib.import_module(f"{__name__}.{_NEEDS_TENSORFLOW[name]}")
        return getattr(module, name)
    return _OLD.resolve(name)


def __dir__() -> list[str]:
    # the names __getattr__ serves are part of the module even before TensorFlow is loaded
    return sorted(set(globals()) | set(_NEEDS_TENSORFLOW))
