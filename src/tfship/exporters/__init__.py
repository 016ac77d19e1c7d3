"""Export Estimator checkpoints as SavedModels that TF Serving can trust.

Receivers from one schema (``parsing_receiver``, ``raw_receiver``, ``both_receiver``), an export
function that stages, verifies and publishes (``export_model``), and drop-in exporters for
``tf.estimator.EvalSpec(exporters=...)``: ``LatestExporter``, ``FinalExporter`` and a
restart-safe ``BestExporter``.

Importing this package is cheap: TensorFlow loads on first use of a name below.

Example:
    >>> from tfship.exporters import BestExporter, parsing_receiver  # doctest: +SKIP
    >>> best = BestExporter("best", parsing_receiver(schema), metric="auc", mode="max")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> private module that defines it
_EXPORTS: dict[str, str] = {
    "BestExporter": "_exporters",
    "CheckpointNotFoundError": "_errors",
    "Decision": "_exporters",
    "EvalRecord": "_events",
    "ExportResult": "_export",
    "FinalExporter": "_exporters",
    "LatestExporter": "_exporters",
    "MetricNotFoundError": "_errors",
    "Receiver": "_receivers",
    "SignatureReport": "_signatures",
    "VerificationError": "_errors",
    "Version": "_publish",
    "best_checkpoint": "_events",
    "both_receiver": "_receivers",
    "build_receiver": "_receivers",
    "export_model": "_export",
    "list_versions": "_publish",
    "parsing_receiver": "_receivers",
    "raw_receiver": "_receivers",
    "read_eval_history": "_events",
    "resolve_mode": "_events",
    "run_final_exports": "_exporters",
    "standard_exporters": "_exporters",
    "verify_export": "_export",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tfship.exporters' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tfship.exporters.{module}"), name)


def __dir__() -> list[str]:
    return __all__
