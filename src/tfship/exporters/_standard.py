"""The standard set of exporters (``best``, ``latest``, ``final``) and the final exports after training."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tfship.exporters._base import TfshipExporter
from tfship.exporters._best import BestExporter
from tfship.exporters._final import FinalExporter
from tfship.exporters._latest import LatestExporter

EXPORT_KINDS = ("best", "latest", "final")


def standard_exporters(
    source: Any,
    kinds: Iterable[str] = EXPORT_KINDS,
    *,
    receiver: str = "parsing",
    metric: str = "loss",
    mode: str = "auto",
    keep_best: int | None = 1,
    keep_latest: int | None = 5,
    **options: Any,
) -> list[TfshipExporter]:
    """Exporters named ``best``, ``latest`` and ``final`` (those in ``kinds``) sharing a receiver.

    Args:
        source: a Schema, parse spec, feature columns, TensorSpecs, or a ``Receiver``.
        kinds: which of ``best``, ``latest``, ``final`` to make, in that order.
        receiver: ``parsing``, ``raw`` or ``both`` (ignored when ``source`` is a ``Receiver``).
        metric: the metric the ``BestExporter`` ranks by.
        mode: how it ranks (``min``, ``max`` or ``auto``).
        keep_best: how many versions the ``BestExporter`` keeps.
        keep_latest: how many versions the ``LatestExporter`` keeps.
        options: passed to every exporter (``assets_extra``, ``as_text``, ``warmup``, ``verify``,
            ``version_by``).

    Example:
        >>> from tfship.schema import Schema
        >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
        ...                       "features": [{"name": "x"}]})
        >>> exporters = standard_exporters(schema, ["best", "final"], metric="auc")
        >>> [e.name for e in exporters]
        ['best', 'final']
    """
    from tfship.exporters._receivers import build_receiver

    wanted = list(kinds)
    unknown = sorted(set(wanted) - set(EXPORT_KINDS))
    if unknown:
        raise ValueError(f"unknown export kinds {unknown}; choose from {', '.join(EXPORT_KINDS)}")
    rec = build_receiver(source, receiver)
    made: list[TfshipExporter] = []
    if "best" in wanted:
        made.append(BestExporter("best", rec, exports_to_keep=keep_best, metric=metric, mode=mode, **options))
    if "latest" in wanted:
        made.append(LatestExporter("latest", rec, exports_to_keep=keep_latest, **options))
    if "final" in wanted:
        made.append(FinalExporter("final", rec, **options))
    return made


def run_final_exports(estimator: Any, exporters: Iterable[object]) -> list[str]:
    """Call ``export_final`` on every ``FinalExporter`` among ``exporters``; call after training.

    A run without ``max_steps`` never has a final evaluation, so ``train_and_evaluate`` never
    triggers a ``FinalExporter``; this does. A step already exported is skipped, so calling it
    after a run that did export is harmless. Returns the new version paths.

    Example::

        run_final_exports(estimator, exporters)  # ['model/export/final/1795236337']
    """
    paths = []
    for exporter in exporters:
        if isinstance(exporter, FinalExporter):
            path = exporter.export_final(estimator)
            if path is not None:
                paths.append(path)
    return paths
