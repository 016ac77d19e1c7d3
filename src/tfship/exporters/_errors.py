"""Exceptions raised by the exporters (below ``ExportError`` and ``ModelError``)."""

from __future__ import annotations

from collections.abc import Iterable

from tfship.errors import ExportError, ModelError


class MetricNotFoundError(ExportError):
    """Raised when the metric a ``BestExporter`` ranks by is not in an evaluation result.

    The metric was chosen by the user, so this is bad input (exit code 2).

    Example:
        >>> err = MetricNotFoundError("auc", ["accuracy", "loss"])
        >>> err.available
        ('accuracy', 'loss')
    """

    exit_code = 2

    def __init__(self, metric: str, available: Iterable[str], *, where: str = "") -> None:
        self.metric = metric
        self.available = tuple(sorted(available))
        place = f" in {where}" if where else ""
        super().__init__(
            f"metric {metric!r} not found{place}; metrics that exist: {', '.join(self.available) or '(none)'}"
        )


class VerificationError(ExportError):
    """Raised when a staged export fails verification (load, signatures, warmup replay).

    Example:
        >>> VerificationError("signature 'serving_default' missing").exit_code
        1
    """


class CheckpointNotFoundError(ModelError):
    """Raised when there is no checkpoint to export in a model directory.

    Example:
        >>> CheckpointNotFoundError("no checkpoint", path="/m").path
        '/m'
    """
