"""``FinalExporter``: a drop-in for ``tf.estimator.FinalExporter``, with ``export_final``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfship.exporters._base import TfshipExporter, evaluation_step
from tfship.exporters._export import resolve_checkpoint


class FinalExporter(TfshipExporter):
    """Exports once at the end of training; ``export_final`` does it for runs without max_steps.

    The arguments of ``tf.estimator.FinalExporter``, in its order, then tfship's own (see
    ``LatestExporter``). ``train_and_evaluate`` marks an evaluation final only when
    ``global_step >= max_steps``, so a run without ``max_steps`` never triggers it: call
    ``export_final(estimator)`` after training instead. A step already exported by this
    exporter is not exported again.

    Example:
        >>> from tfship.exporters import parsing_receiver
        >>> from tfship.schema import Schema
        >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
        ...                       "features": [{"name": "x"}]})
        >>> final = FinalExporter("final", parsing_receiver(schema))
        >>> final.name, final.kind
        ('final', 'final')

    After training, ``final.export_final(estimator)`` returns the new version's path.
    """

    kind = "final"  # tf.estimator.FinalExporter's arguments are those of the base class

    def export(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str | None,
        eval_result: Mapping[str, Any] | None,
        is_the_final_export: bool,
    ) -> str | None:
        """Export only when ``is_the_final_export``; returns the version path or ``None``."""
        step = self._trained_step(estimator, checkpoint_path, eval_result)
        if not is_the_final_export:
            self._decide("skipped", None, step, f"skipped: step {step} is not the final evaluation")
            return None
        return self._export_once(estimator, Path(os.fsdecode(export_path)), checkpoint_path, eval_result)

    def export_final(
        self,
        estimator: Any,
        *,
        checkpoint_path: str | None = None,
        eval_result: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Export the newest (or given) checkpoint to ``<model_dir>/export/<name>`` now."""
        return self._export_once(estimator, self.export_dir(estimator), checkpoint_path, eval_result)

    def _export_once(
        self,
        estimator: Any,
        base: Path,
        checkpoint_path: str | None,
        eval_result: Mapping[str, Any] | None,
    ) -> str | None:
        self._start(base)
        ckpt = resolve_checkpoint(estimator, checkpoint_path)
        step = evaluation_step(eval_result, ckpt)
        for version in self._ours(base):
            if step is not None and version.metadata.get("global_step") == step:
                self._decide(
                    "skipped",
                    version.number,
                    step,
                    f"skipped: step {step} already exported as {version.number}",
                )
                return None
        result = self._export(estimator, base, ckpt, eval_result, {})
        self._decide_exported(result, f"exported {result.version}: final at step {result.global_step}")
        return str(result.path)


# Users import it from ``tfship.exporters``: reprs and messages name it there.
FinalExporter.__module__ = "tfship.exporters"
