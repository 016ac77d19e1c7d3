"""``LatestExporter``, ``FinalExporter`` and ``BestExporter``: drop-ins for ``EvalSpec``.

``train_and_evaluate`` calls ``exporter.export(estimator, export_path, checkpoint_path,
eval_result, is_the_final_export)`` after each evaluation, with ``export_path =
<model_dir>/export/<name>``. The classes derive from ``tf.estimator.Exporter`` (which
``EvalSpec`` requires), so importing this module imports TensorFlow; the package's
``__getattr__`` imports it only when one of them is asked for.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tfship._tf import estimator
from tfship.errors import TrainError, value_text
from tfship.exporters._errors import MetricNotFoundError
from tfship.exporters._events import fmt, resolve_mode
from tfship.exporters._export import (
    ExportResult,
    ReceiverFn,
    checkpoint_step,
    export_model,
    resolve_checkpoint,
)
from tfship.exporters._publish import (
    Version,
    published_versions,
    sweep_staging,
    write_json_atomic,
)

logger = logging.getLogger("tfship.exporters")

BEST_RECORD_FILE = "tfship-best.json"
#: tf.estimator's default: the evaluations of the unnamed ``EvalSpec``.
DEFAULT_EVENT_FILE_PATTERN = "eval/*.tfevents.*"
_UNTIED_STEP_HINT = (
    "a Keras optimizer in a model_fn counts its own steps unless tied to the global step: "
    "optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()"
)


def show(message: str, *args: Any) -> None:
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


class _TfshipExporter(estimator().Exporter):  # type: ignore[misc]
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

    def _check_trained(self, estimator: Any, step: int | None) -> None:
        # In a local train_and_evaluate the first checkpoint is never evaluated, so an
        # evaluation at step 0 comes after a training loop that never moved the global step.
        # (A cluster's evaluator does evaluate the chief's first checkpoint, at step 0.)
        config = getattr(estimator, "config", None)
        if step != 0 or config is None or config.task_type == "evaluator" or config.cluster_spec:
            return
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
        show("%s: %s", self._name, line)

    def _decide_exported(self, result: ExportResult, line: str) -> None:
        self._decide("exported", result.version, result.global_step, line)

    def _gc(self, base: Path, keep_order: list[Version], keep: int | None, protect: set[int]) -> None:
        if keep is None:
            return
        for version in keep_order[keep:]:
            if version.number in protect:
                continue
            shutil.rmtree(version.path, ignore_errors=True)
            show("%s: removed %d (%s keeps %d)", self._name, version.number, self.kind, keep)

    def _ours(self, base: Path) -> list[Version]:
        # Only versions whose metadata names this exporter: foreign directories are never touched.
        return [
            v for v in published_versions(base) if v.metadata.get("exporter", {}).get("name") == self._name
        ]


def _step(eval_result: Mapping[str, Any] | None, checkpoint_path: str | None) -> int | None:
    if eval_result and "global_step" in eval_result:
        return int(eval_result["global_step"])
    return checkpoint_step(checkpoint_path) if checkpoint_path else None


def _check_keep(cls: str, exports_to_keep: int | None) -> int | None:
    if exports_to_keep is not None and (
        isinstance(exports_to_keep, bool) or not isinstance(exports_to_keep, int) or exports_to_keep <= 0
    ):
        raise ValueError(
            f"{cls}: exports_to_keep must be a positive int, or None to keep every export; "
            f"got {exports_to_keep!r}"
        )
    return exports_to_keep


class LatestExporter(_TfshipExporter):
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
        self._keep = _check_keep(self.public_name(), exports_to_keep)

    def export(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str | None,
        eval_result: Mapping[str, Any] | None,
        is_the_final_export: bool,
    ) -> str | None:
        """Export ``checkpoint_path`` as a new version; returns its path (``None`` if skipped)."""
        base = Path(os.fsdecode(export_path))
        self._start(base)
        step = _step(eval_result, checkpoint_path)
        self._check_trained(estimator, step)
        if self._version_by == "step" and step is not None and (base / str(step)).exists():
            # The same step evaluated again (e.g. a resumed run): its version already exists.
            self._decide("skipped", step, step, f"skipped: version {step} already exists")
            return None
        result = self._export(estimator, base, checkpoint_path, eval_result, {"keep": self._keep})
        self._decide_exported(result, f"exported {result.version} at step {result.global_step}")
        ours = sorted(self._ours(base), key=lambda v: v.number, reverse=True)
        self._gc(base, ours, self._keep, {result.version})
        return str(result.path)


class FinalExporter(_TfshipExporter):
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
        step = _step(eval_result, checkpoint_path)
        self._check_trained(estimator, step)
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
        step = _step(eval_result, ckpt)
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


class BestExporter(_TfshipExporter):
    """Exports when the evaluation beats the best so far, restart-safe.

    The arguments of ``tf.estimator.BestExporter``, in its order and with its defaults, then
    tfship's own, keyword-only. The best record (metric, mode and value, or the compare_fn's
    name and the metrics it read; then global step, checkpoint, version, metrics) is kept in
    ``<export_path>/tfship-best.json`` and read back on start, so a restarted run never
    exports a worse model. By metric, NaN and infinite values never become best, and
    ``exports_to_keep`` versions are kept by metric (not by age); the current best and the
    newest are never removed.

    Args:
        name: the exporter's directory name under ``<model_dir>/export/``.
        serving_input_receiver_fn: a function returning a ``ServingInputReceiver``, or a
            tfship ``Receiver``.
        event_file_pattern: evaluation event files, relative to the model dir, that give the
            best so far when there is no best record yet (no record file, none of this
            exporter's versions): the best of their evaluations before the current step.
            ``None`` starts from nothing: the first evaluation is exported.
        compare_fn: ``fn(best_eval_result=..., current_eval_result=...) -> bool``, True when
            the current evaluation is better (tf.estimator's contract); ``None`` compares
            ``metric`` by ``mode``, which by default is tf.estimator's smaller ``loss``. With a
            compare_fn, ``metric``, ``mode`` and ``min_delta`` are unused: the log lines and the
            record name the function and the metrics it read, and the newest versions are kept.
        assets_extra: destination under ``assets.extra/`` -> source file to copy.
        as_text: write ``saved_model.pbtxt`` instead of ``saved_model.pb``.
        exports_to_keep: how many of the best versions to keep (``None``: all).
        metric: the evaluation metric to rank by (e.g. ``"auc"``, ``"loss"``).
        mode: ``"min"``, ``"max"`` or ``"auto"`` (max for auc/accuracy/precision/recall-like).
        min_delta: how much the metric must improve to count as better.
        warmup: warmup records, as ``export_model`` takes them.
        verify: check each export before publishing it, as ``export_model`` does.
        version_by: how versions are numbered, as in ``export_model``.

    Example:
        >>> import tensorflow as tf
        >>> from tfship.exporters import parsing_receiver
        >>> from tfship.schema import Schema
        >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
        ...                       "features": [{"name": "x"}]})
        >>> best = BestExporter("best", parsing_receiver(schema), metric="auc")
        >>> spec = tf.estimator.EvalSpec(lambda: None, exporters=[best])
        >>> [e.name for e in spec.exporters]
        ['best']
    """

    kind = "best"

    def __init__(
        self,
        name: str = "best_exporter",
        serving_input_receiver_fn: ReceiverFn | None = None,
        event_file_pattern: str | None = DEFAULT_EVENT_FILE_PATTERN,
        compare_fn: Callable[..., bool] | None = None,
        assets_extra: Mapping[str, str | os.PathLike[str]] | None = None,
        as_text: bool = False,
        exports_to_keep: int | None = 5,
        *,
        metric: str = "loss",
        mode: str = "auto",
        min_delta: float = 0.0,
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
        cls = self.public_name()
        pattern = event_file_pattern
        if pattern is not None and (not isinstance(pattern, str) or not pattern):
            raise ValueError(
                f"{cls}: event_file_pattern must be a glob relative to the model dir, or None; "
                f"got {event_file_pattern!r}"
            )
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"{cls}: metric must be a non-empty string, got {metric!r}")
        if not isinstance(min_delta, (int, float)) or min_delta < 0 or math.isnan(min_delta):
            raise ValueError(f"{cls}: min_delta must be a number >= 0, got {min_delta!r}")
        if compare_fn is not None:
            _check_compare_fn(cls, compare_fn)
        self._event_file_pattern = event_file_pattern
        self._metric = metric
        self._mode = resolve_mode(metric, mode)
        self._min_delta = float(min_delta)
        self._keep = _check_keep(cls, exports_to_keep)
        self._compare_fn = compare_fn
        self._fn_name = _callable_name(compare_fn) if compare_fn is not None else None
        self._records: dict[Path, dict[str, Any] | None] = {}

    @property
    def metric(self) -> str:
        """The metric this exporter ranks by."""
        return self._metric

    @property
    def mode(self) -> str:
        """``"min"`` or ``"max"``."""
        return self._mode

    def best_record(self, export_path: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The persisted best record under ``export_path`` (``None`` if nothing is best yet)."""
        base = Path(os.fspath(export_path))
        if base not in self._records:
            self._records[base] = self._load_record(base)
        return self._records[base]

    def export(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str | None,
        eval_result: Mapping[str, Any] | None,
        is_the_final_export: bool,
    ) -> str | None:
        """Export if the evaluation beats the best record; returns the path or ``None``."""
        base = Path(os.fsdecode(export_path))
        self._start(base)
        metrics = dict(eval_result or {})
        step = _step(metrics, checkpoint_path)
        self._check_trained(estimator, step)
        value = self._value(metrics, base)
        record = self.best_record(base)
        if record is None and self._event_file_pattern is not None:
            record = self._records[base] = self._seed_from_events(estimator, step)
        verdict = self._compare(value, metrics, record)
        if not verdict.better:
            self._decide("skipped", None, step, f"skipped: {verdict.why} at step {step}")
            return None
        info = self._export_info(value, record, verdict)
        result = self._export(estimator, base, checkpoint_path, metrics, info)
        self._save_record(base, value, metrics, result, verdict)
        self._decide_exported(result, f"exported {result.version}: {verdict.why} at step {step}")
        self._gc_best(base, result.version)
        return str(result.path)

    def _ranking(self) -> dict[str, Any]:
        # What chose the best: written into the record and the versions, checked on reading.
        if self._fn_name is not None:
            return {"compare_fn": self._fn_name}
        return {"metric": self._metric, "mode": self._mode}

    def _export_info(
        self, value: float | None, record: Mapping[str, Any] | None, verdict: _Verdict
    ) -> dict[str, Any]:
        if self._fn_name is None:
            previous_value = record.get("value") if record else None
            return {**self._ranking(), "value": value, "previous_best": previous_value}
        previous = None
        if record is not None:
            previous = {"version": record.get("version"), "metrics": dict(record.get("metrics", {}))}
        return {**self._ranking(), "compared": list(verdict.compared), "previous_best": previous}

    def _value(self, metrics: Mapping[str, Any], base: Path) -> float | None:
        if self._compare_fn is not None:
            return None  # compare_fn alone decides, on all the metrics
        if self._metric not in metrics:
            raise MetricNotFoundError(
                self._metric,
                [k for k in metrics if k != "global_step"],
                where=f"the evaluation result given to exporter {self._name!r}",
            )
        try:
            return float(metrics[self._metric])
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"metric {self._metric!r} is not a number: {value_text(metrics[self._metric])}"
            ) from exc

    def _compare(
        self, value: float | None, metrics: Mapping[str, Any], record: dict[str, Any] | None
    ) -> _Verdict:
        if self._fn_name is not None:
            return self._compare_by_fn(metrics, record)
        m = self._metric
        if value is not None and not math.isfinite(value):
            return _Verdict(False, f"{m} {fmt(value)} is not finite and never becomes best")
        if record is None:
            return _Verdict(True, f"{m} {fmt(value)} (first best)")
        best = record.get("value")
        assert value is not None and best is not None
        sign = ">" if self._mode == "max" else "<"
        improved = value > best + self._min_delta if self._mode == "max" else (value < best - self._min_delta)
        if improved:
            return _Verdict(True, f"{m} {fmt(value)} {sign} {fmt(best)}")
        if self._min_delta and (value > best if self._mode == "max" else value < best):
            return _Verdict(
                False, f"{m} {fmt(value)} does not beat best {fmt(best)} by min_delta {fmt(self._min_delta)}"
            )
        anti = "<=" if self._mode == "max" else ">="
        return _Verdict(False, f"{m} {fmt(value)} {anti} best {fmt(best)}")

    def _compare_by_fn(self, metrics: Mapping[str, Any], record: dict[str, Any] | None) -> _Verdict:
        # tf.estimator's rule: the user's function gets both evaluations and decides. The
        # metrics it reads are noted, so the log names them and nothing it did not look at.
        assert self._compare_fn is not None
        name = f"compare_fn {self._fn_name}"
        if record is None:
            return _Verdict(True, f"first best for {name}")
        best_read: set[str] = set()
        current_read: set[str] = set()
        best_metrics = {k: _num(v) for k, v in record.get("metrics", {}).items()}
        ok = bool(
            self._compare_fn(
                best_eval_result=_Watched(best_metrics, best_read),
                current_eval_result=_Watched(metrics, current_read),
            )
        )
        version = record.get("version")
        best = f"best {version}" if version is not None else f"the best at step {record.get('global_step')}"
        verdict = "prefers" if ok else "rejects"
        compared = tuple(sorted(best_read | current_read))
        if not compared:
            return _Verdict(ok, f"{name} {verdict} this evaluation over {best} (it read no metric)")
        current_text = _metrics_text(metrics, current_read)
        best_text = _metrics_text(best_metrics, best_read)
        return _Verdict(ok, f"{name} {verdict} {current_text} over {best} with {best_text}", compared)

    def _record_path(self, base: Path) -> Path:
        return base / BEST_RECORD_FILE

    def _load_record(self, base: Path) -> dict[str, Any] | None:
        import json

        path = self._record_path(base)
        record: dict[str, Any] | None = None
        if path.exists():
            try:
                record = json.loads(path.read_text())
            except ValueError:
                show("%s: ignoring unreadable best record %s", self._name, path)
        if record is not None and not self._matches(record):
            record = None
        # A crash between publishing a version and rewriting the record leaves the record
        # behind the versions: the better of the two is the best so far.
        record = self._reconcile(record, self._record_from_versions(base))
        if record is None:
            return None
        if self._fn_name is not None:
            show(
                "%s: best so far for compare_fn %s: version %s, step %s",
                self._name,
                self._fn_name,
                record.get("version"),
                record.get("global_step"),
            )
            return record
        show(
            "%s: best so far %s %s (version %s, step %s)",
            self._name,
            self._metric,
            fmt(record["value"]),
            record.get("version"),
            record.get("global_step"),
        )
        return record

    def _reconcile(
        self, record: dict[str, Any] | None, from_versions: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        if self._fn_name is not None:
            # Each export was preferred over the best before it: the newest version is the best.
            if record is None or not isinstance(record.get("metrics"), dict):
                return from_versions
            if from_versions is not None and from_versions["version"] > (_num(record.get("version")) or 0):
                return from_versions
            return record
        if record is None or (
            from_versions is not None
            and _num(record.get("value")) is not None
            and self._better(from_versions["value"], float(record["value"]))
        ):
            record = from_versions
        if record is None:
            return None
        value = _num(record.get("value"))
        if value is None or not math.isfinite(value):
            return None
        record["value"] = value
        return record

    def _seed_from_events(self, estimator: Any, step: int | None) -> dict[str, Any] | None:
        from tfship.exporters._events import read_event_files

        assert self._event_file_pattern is not None
        past = [
            r
            for r in read_event_files(estimator.model_dir, self._event_file_pattern)
            if step is None or r.step < step
        ]
        best = self._best_of(past)
        if best is None:
            return None
        seeded: dict[str, Any] = {**self._ranking(), "global_step": best.step, "version": None}
        if self._fn_name is None:
            value = best.metrics.get(self._metric)
            seeded["value"] = value
            chosen = f"{self._metric} {fmt(value)}"
        else:
            chosen = f"for compare_fn {self._fn_name}"
        show(
            "%s: best so far from the evaluations in %s: %s at step %d",
            self._name,
            self._event_file_pattern,
            chosen,
            best.step,
        )
        return {**seeded, "source": self._event_file_pattern, "metrics": dict(best.metrics)}

    def _best_of(self, evaluations: list[Any]) -> Any:
        if self._compare_fn is not None:
            # tf.estimator folds the evaluations, oldest first, through compare_fn
            best = None
            for r in evaluations:
                better = best is None or self._compare_fn(
                    best_eval_result=best.metrics, current_eval_result=r.metrics
                )
                best = r if better else best
            return best
        m = self._metric
        scored = [r for r in evaluations if m in r.metrics and math.isfinite(r.metrics[m])]
        if not scored:
            return None
        sign = -1.0 if self._mode == "max" else 1.0
        return min(scored, key=lambda r: (sign * r.metrics[m], r.step))

    def _matches(self, record: Mapping[str, Any]) -> bool:
        ours = self._ranking()
        theirs = {k: record.get(k) for k in ("compare_fn", "metric", "mode") if record.get(k) is not None}
        if theirs != ours:
            show(
                "%s: best record was chosen by %s, this exporter chooses by %s: starting afresh",
                self._name,
                _ranking_text(theirs),
                _ranking_text(ours),
            )
            return False
        return True

    def _record_from_versions(self, base: Path) -> dict[str, Any] | None:
        # The record file may be lost; our versions' metadata still says how good each was.
        ranked = [
            v
            for v in self._ours(base)
            if all(v.metadata.get("exporter", {}).get(k) == want for k, want in self._ranking().items())
        ]
        if self._fn_name is not None:
            # Each export was preferred over the best before it: the newest is the best.
            return self._version_record(max(ranked, key=lambda v: v.number)) if ranked else None
        best: dict[str, Any] | None = None
        for v in ranked:
            value = _num(v.metadata["exporter"].get("value"))
            if value is None or not math.isfinite(value):
                continue
            if best is None or self._better_or_equal(value, best["value"]):
                best = {**self._version_record(v), "value": value}
        return best

    def _version_record(self, v: Version) -> dict[str, Any]:
        return {
            **self._ranking(),
            "global_step": v.metadata.get("global_step"),
            "version": v.number,
            "checkpoint": v.metadata.get("checkpoint"),
            "metrics": v.metadata.get("metrics", {}),
        }

    def _better_or_equal(self, a: float, b: float) -> bool:
        return a >= b if self._mode == "max" else a <= b

    def _better(self, a: float, b: float) -> bool:
        return a > b if self._mode == "max" else a < b

    def _save_record(
        self,
        base: Path,
        value: float | None,
        metrics: Mapping[str, Any],
        result: ExportResult,
        verdict: _Verdict,
    ) -> None:
        from tfship.exporters._export import jsonable_metrics

        record: dict[str, Any] = self._ranking()
        if self._fn_name is None:
            record["value"] = value
        else:
            record["compared"] = list(verdict.compared)
        record.update(
            global_step=result.global_step,
            checkpoint=result.checkpoint,
            version=result.version,
            metrics=jsonable_metrics(metrics),
        )
        write_json_atomic(self._record_path(base), record)
        self._records[base] = record

    def _gc_best(self, base: Path, newest: int) -> None:
        ours = self._ours(base)
        record = self._records.get(base) or {}

        def rank(v: Version) -> tuple[float, int]:
            # Under compare_fn each export beat the one before, so the newest are the best
            # (tf.estimator keeps the newest too).
            value = None if self._fn_name else _num(v.metadata.get("exporter", {}).get("value"))
            if value is None or not math.isfinite(value):
                return (math.inf, -v.number)
            return (-value if self._mode == "max" else value, -v.number)

        protect = {newest, int(record.get("version") or newest)}
        self._gc(base, sorted(ours, key=rank), self._keep, protect)


def _metrics_text(metrics: Mapping[str, Any], names: Iterable[str]) -> str:
    shown = [f"{k} {fmt(_num(metrics.get(k)))}" for k in sorted(names)]
    return ", ".join(shown) or "no metric"


class _Verdict(NamedTuple):
    """Whether an evaluation becomes best, the reason for the log, and the metrics compared."""

    better: bool
    why: str
    compared: tuple[str, ...] = ()


class _Watched(dict[str, Any]):
    """An evaluation handed to compare_fn that notes the names of the metrics it reads."""

    def __init__(self, metrics: Mapping[str, Any], read: set[str]) -> None:
        super().__init__(metrics)
        self._read = read

    def __getitem__(self, key: str) -> Any:
        self._read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key in self:
            self._read.add(key)
        return super().get(key, default)

    def __iter__(self) -> Iterator[str]:
        self._read.update(super().keys())
        return super().__iter__()

    def values(self) -> Any:
        self._read.update(super().keys())
        return super().values()

    def items(self) -> Any:
        self._read.update(super().keys())
        return super().items()


def _ranking_text(ranking: Mapping[str, Any]) -> str:
    if "compare_fn" in ranking:
        return f"compare_fn {ranking['compare_fn']}"
    if not ranking:
        return "nothing known"
    return f"{ranking.get('metric')} ({ranking.get('mode')})"


def _callable_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return str(name) if name else type(fn).__qualname__


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _check_compare_fn(cls: str, fn: Callable[..., bool]) -> None:
    if not callable(fn):
        raise ValueError(f"{cls}: compare_fn must be callable, got {fn!r}")
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    needed = {"best_eval_result", "current_eval_result"}
    if not needed <= set(params):
        raise ValueError(
            f"{cls}: compare_fn must accept the keyword arguments best_eval_result and "
            f"current_eval_result; it takes {', '.join(params) or 'none'}"
        )


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
) -> list[Any]:
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
    made: list[Any] = []
    if "best" in wanted:
        made.append(BestExporter("best", rec, exports_to_keep=keep_best, metric=metric, mode=mode, **options))
    if "latest" in wanted:
        made.append(LatestExporter("latest", rec, exports_to_keep=keep_latest, **options))
    if "final" in wanted:
        made.append(FinalExporter("final", rec, **options))
    return made


def run_final_exports(estimator: Any, exporters: Iterable[Any]) -> list[str]:
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


# Users import these from ``tfship.exporters``: reprs and messages name them there.
for _public in (BestExporter, ExportDecision, FinalExporter, LatestExporter):
    _public.__module__ = "tfship.exporters"
