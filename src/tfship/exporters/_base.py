"""What every tfship exporter shares: the ``tf.estimator.Exporter`` base, its decisions, its log.

``train_and_evaluate`` calls ``exporter.export(estimator, export_path, checkpoint_path,
eval_result, is_the_final_export)`` after each evaluation, with ``export_path =
<model_dir>/export/<name>``. ``TfshipExporter`` derives from ``tf.estimator.Exporter`` (which
``EvalSpec`` requires), so importing this module imports TensorFlow; the package's
``__getattr__`` imports the exporters only when one of them is asked for.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfship._tf import estimator
from tfship.errors import TrainError
from tfship.exporters._export import ExportResult, ReceiverFn, checkpoint_step, export_model
from tfship.exporters._publish import Version, published_versions, sweep_staging

logger = logging.getLogger("tfship.exporters")

_UNTIED_STEP_HINT = (
    "a Keras optimizer in a model_fn counts its own steps unless tied to the global step: "
    "optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()"
)


def log_exporter_line(message: str, *args: object) -> None:
    """Log one exporter line at INFO where a user of ``train_and_evaluate`` sees it.

    Through the ``tfship.exporters`` logger when the program configured logging (a handler on
    the root logger, or a level on ``tfship``/``tfship.exporters``); otherwise on stderr, in
    the format of TensorFlow's own ``INFO:tensorflow:`` lines. Silence them with
    ``logging.getLogger("tfship.exporters").setLevel(logging.WARNING)``.
    """
    if logger.isEnabledFor(logging.INFO):
        logger.info(message, *args)
        return
    configured = logging.getLogger().handlers or any(
        logging.getLogger(name).level != logging.NOTSET or logging.getLogger(name).handlers
        for name in ("tfship", "tfship.exporters")
    )
    if configured:
        return  # the program chose a level that hides INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
    handler.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0, message, args, None))


@dataclass(frozen=True)
class ExportDecision:
    """One exporter decision: what was done, to which version, and the log line said.

    Example:
        >>> ExportDecision("skipped", None, 400, "skipped: auc 0.889 <= best 0.912").exported
        False
    """

    action: str
    version: int | None
    global_step: int | None
    line: str

    @property
    def exported(self) -> bool:
        """Whether this decision published a version."""
        return self.action == "exported"


class TfshipExporter(estimator().Exporter):  # type: ignore[misc]
    """What every tfship exporter does: validate, export through ``export_model``, log."""

    kind = "export"

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: ReceiverFn | None,
        assets_extra: Mapping[str, str | os.PathLike[str]] | None = None,
        as_text: bool = False,
        *,
        warmup: Iterable[Any] | None = None,
        verify: bool = True,
        version_by: str = "time",
    ) -> None:
        cls = self.public_name()
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{cls}: name must be a non-empty string, got {name!r}")
        if not callable(serving_input_receiver_fn):
            raise ValueError(
                f"{cls} {name!r}: serving_input_receiver_fn must be a function returning a "
                f"ServingInputReceiver (or a tfship Receiver), got {serving_input_receiver_fn!r}"
            )
        if assets_extra is not None and not isinstance(assets_extra, Mapping):
            raise ValueError(
                f"{cls} {name!r}: assets_extra must be a dict of destination under assets.extra "
                f"-> source file, got {type(assets_extra).__name__}"
            )
        if version_by not in ("time", "step"):
            raise ValueError(f"{cls}: version_by must be 'time' or 'step', got {version_by!r}")
        self._name = name
        self._receiver = serving_input_receiver_fn
        self._assets_extra = dict(assets_extra or {})
        self._as_text = bool(as_text)
        self._warmup = list(warmup) if warmup is not None else None
        self._verify = verify
        self._version_by = version_by
        self._swept: set[Path] = set()
        self.decisions: list[ExportDecision] = []
        self.last_result: ExportResult | None = None

    @classmethod
    def public_name(cls) -> str:
        """The class as a user imports it, e.g. ``tfship.exporters.BestExporter``."""
        return f"tfship.exporters.{cls.__name__}"

    @property
    def name(self) -> str:
        """The exporter's name: its directory under ``<model_dir>/export/``."""
        return self._name

    @property
    def receiver(self) -> ReceiverFn:
        """The ``serving_input_receiver_fn`` the exporter builds its exports with."""
        return self._receiver

    def export_dir(self, estimator: Any) -> Path:
        """Where ``train_and_evaluate`` puts this exporter's versions for ``estimator``."""
        return Path(os.fspath(estimator.model_dir)) / "export" / self._name

    def _start(self, base: Path) -> None:
        # Sweep once per base directory and process: stale staging of killed exports.
        if base not in self._swept:
            sweep_staging(base)
            self._swept.add(base)

    def _begin(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str | None,
        eval_result: Mapping[str, Any] | None,
    ) -> tuple[Path, int | None]:
        """Start an evaluation's export: sweep ``export_path``, then read and check the step."""
        base = Path(os.fsdecode(export_path))
        self._start(base)
        return base, self._trained_step(estimator, checkpoint_path, eval_result)

    def _trained_step(
        self, estimator: Any, checkpoint_path: str | None, eval_result: Mapping[str, Any] | None
    ) -> int | None:
        """The evaluation's global step, which must show that training moved the step."""
        step = evaluation_step(eval_result, checkpoint_path)
        # In a local train_and_evaluate the first checkpoint is never evaluated, so an
        # evaluation at step 0 comes after a training loop that never moved the global step.
        # (A cluster's evaluator does evaluate the chief's first checkpoint, at step 0.)
        config = getattr(estimator, "config", None)
        if step != 0 or config is None or config.task_type == "evaluator" or config.cluster_spec:
            return step
        raise TrainError(
            f"{self.public_name()} {self._name!r}: the evaluation after training is of global "
            f"step 0, so training never advanced the global step and the model is untrained; "
            f"{_UNTIED_STEP_HINT} (or the training input was empty)"
        )

    def _export(
        self,
        estimator: Any,
        base: Path,
        checkpoint_path: str | None,
        eval_result: Mapping[str, Any] | None,
        info: Mapping[str, Any],
    ) -> ExportResult:
        result = export_model(
            estimator,
            base,
            self._receiver,
            checkpoint_path=checkpoint_path,
            version_by=self._version_by,
            assets_extra=self._assets_extra,
            as_text=self._as_text,
            warmup=self._warmup,
            verify=self._verify,
            exporter={"name": self._name, "kind": self.kind, **info},
            eval_result=eval_result,
        )
        self.last_result = result
        return result

    def _decide(self, action: str, version: int | None, step: int | None, line: str) -> None:
        self.decisions.append(ExportDecision(action, version, step, line))
        log_exporter_line("%s: %s", self._name, line)

    def _decide_exported(self, result: ExportResult, line: str) -> None:
        self._decide("exported", result.version, result.global_step, line)

    def _gc(self, base: Path, keep_order: list[Version], keep: int | None, protect: set[int]) -> None:
        if keep is None:
            return
        for version in keep_order[keep:]:
            if version.number in protect:
                continue
            shutil.rmtree(version.path, ignore_errors=True)
            log_exporter_line("%s: removed %d (%s keeps %d)", self._name, version.number, self.kind, keep)

    def _ours(self, base: Path) -> list[Version]:
        # Only versions whose metadata names this exporter: foreign directories are never touched.
        return [
            v for v in published_versions(base) if v.metadata.get("exporter", {}).get("name") == self._name
        ]


def evaluation_step(eval_result: Mapping[str, Any] | None, checkpoint_path: str | None) -> int | None:
    if eval_result and "global_step" in eval_result:
        return int(eval_result["global_step"])
    return checkpoint_step(checkpoint_path) if checkpoint_path else None


def check_keep(cls: str, exports_to_keep: int | None) -> int | None:
    if exports_to_keep is not None and (
        isinstance(exports_to_keep, bool) or not isinstance(exports_to_keep, int) or exports_to_keep <= 0
    ):
        raise ValueError(
            f"{cls}: exports_to_keep must be a positive int, or None to keep every export; "
            f"got {exports_to_keep!r}"
        )
    return exports_to_keep


# Users import it from ``tfship.exporters``: reprs and messages name it there.
ExportDecision.__module__ = "tfship.exporters"
