"""``LatestExporter``: a drop-in for ``tf.estimator.LatestExporter``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from tfship.exporters._base import TfshipExporter, check_keep
from tfship.exporters._export import ReceiverFn


class LatestExporter(TfshipExporter):
    """Exports after every evaluation and keeps the ``exports_to_keep`` newest of its versions.

    The arguments of ``tf.estimator.LatestExporter``, in its order, then tfship's own.

    Args:
        name: the exporter's directory name under ``<model_dir>/export/``.
        serving_input_receiver_fn: a function returning a ``ServingInputReceiver``, or a
            tfship ``Receiver``.
        assets_extra: destination under ``assets.extra/`` -> source file to copy.
        as_text: write ``saved_model.pbtxt`` instead of ``saved_model.pb``.
        exports_to_keep: how many of its newest versions to keep (``None``: all).
        warmup: warmup records, as ``export_model`` takes them.
        verify: check each export before publishing it, as ``export_model`` does.
        version_by: how versions are numbered, as in ``export_model``.

    Example:
        >>> import tensorflow as tf
        >>> from tfship.exporters import parsing_receiver
        >>> from tfship.schema import Schema
        >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
        ...                       "features": [{"name": "x"}]})
        >>> exporter = LatestExporter("latest", parsing_receiver(schema), exports_to_keep=3)
        >>> spec = tf.estimator.EvalSpec(lambda: None, exporters=[exporter])
        >>> [e.name for e in spec.exporters]
        ['latest']
    """

    kind = "latest"

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: ReceiverFn | None,
        assets_extra: Mapping[str, str | os.PathLike[str]] | None = None,
        as_text: bool = False,
        exports_to_keep: int | None = 5,
        *,
        warmup: Iterable[Any] | None = None,
        verify: bool = True,
        version_by: str = "time",
    ) -> None:
        super().__init__(
            name,
            serving_input_receiver_fn,
            assets_extra,
            as_text,
            warmup=warmup,
            verify=verify,
            version_by=version_by,
        )
        self._keep = check_keep(self.public_name(), exports_to_keep)

    def export(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str | None,
        eval_result: Mapping[str, Any] | None,
        is_the_final_export: bool,
    ) -> str | None:
        """Export ``checkpoint_path`` as a new version; returns its path (``None`` if skipped)."""
        base, step = self._begin(estimator, export_path, checkpoint_path, eval_result)
        if self._version_by == "step" and step is not None and (base / str(step)).exists():
            # The same step evaluated again (e.g. a resumed run): its version already exists.
            self._decide("skipped", step, step, f"skipped: version {step} already exists")
            return None
        result = self._export(estimator, base, checkpoint_path, eval_result, {"keep": self._keep})
        self._decide_exported(result, f"exported {result.version} at step {result.global_step}")
        ours = sorted(self._ours(base), key=lambda v: v.number, reverse=True)
        self._gc(base, ours, self._keep, {result.version})
        return str(result.path)


# Users import it from ``tfship.exporters``: reprs and messages name it there.
LatestExporter.__module__ = "tfship.exporters"
