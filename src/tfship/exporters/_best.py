"""``BestExporter``: a drop-in for ``tf.estimator.BestExporter`` that survives a restart."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from tfship.errors import value_text
from tfship.exporters._base import TfshipExporter, check_keep, log_exporter_line
from tfship.exporters._errors import MetricNotFoundError
from tfship.exporters._events import EvalRecord, fmt, resolve_mode
from tfship.exporters._export import ExportResult, ReceiverFn
from tfship.exporters._publish import Version, write_json_atomic
from tfship.exporters._verdict import (
    Verdict,
    Watched,
    callable_name,
    check_compare_fn,
    metrics_text,
    number_or_none,
    ranking_text,
)

BEST_RECORD_FILE = "tfship-best.json"
#: tf.estimator's default: the evaluations of the unnamed ``EvalSpec``.
DEFAULT_EVENT_FILE_PATTERN = "eval/*.tfevents.*"


class BestExporter(TfshipExporter):
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
            check_compare_fn(cls, compare_fn)
        self._event_file_pattern = event_file_pattern
        self._metric = metric
        self._mode = resolve_mode(metric, mode)
        self._min_delta = float(min_delta)
        self._keep = check_keep(cls, exports_to_keep)
        self._compare_fn = compare_fn
        self._fn_name = callable_name(compare_fn) if compare_fn is not None else None
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
        base, step = self._begin(estimator, export_path, checkpoint_path, eval_result)
        metrics = dict(eval_result or {})
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
        self, value: float | None, record: Mapping[str, Any] | None, verdict: Verdict
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
    ) -> Verdict:
        if self._fn_name is not None:
            return self._compare_by_fn(metrics, record)
        m = self._metric
        if value is not None and not math.isfinite(value):
            return Verdict(False, f"{m} {fmt(value)} is not finite and never becomes best")
        if record is None:
            return Verdict(True, f"{m} {fmt(value)} (first best)")
        best = record.get("value")
        assert value is not None and best is not None
        sign = ">" if self._mode == "max" else "<"
        improved = value > best + self._min_delta if self._mode == "max" else (value < best - self._min_delta)
        if improved:
            return Verdict(True, f"{m} {fmt(value)} {sign} {fmt(best)}")
        if self._min_delta and (value > best if self._mode == "max" else value < best):
            return Verdict(
                False, f"{m} {fmt(value)} does not beat best {fmt(best)} by min_delta {fmt(self._min_delta)}"
            )
        anti = "<=" if self._mode == "max" else ">="
        return Verdict(False, f"{m} {fmt(value)} {anti} best {fmt(best)}")

    def _compare_by_fn(self, metrics: Mapping[str, Any], record: dict[str, Any] | None) -> Verdict:
        # tf.estimator's rule: the user's function gets both evaluations and decides. The
        # metrics it reads are noted, so the log names them and nothing it did not look at.
        assert self._compare_fn is not None
        name = f"compare_fn {self._fn_name}"
        if record is None:
            return Verdict(True, f"first best for {name}")
        best_read: set[str] = set()
        current_read: set[str] = set()
        best_metrics = {k: number_or_none(v) for k, v in record.get("metrics", {}).items()}
        ok = bool(
            self._compare_fn(
                best_eval_result=Watched(best_metrics, best_read),
                current_eval_result=Watched(metrics, current_read),
            )
        )
        version = record.get("version")
        best = f"best {version}" if version is not None else f"the best at step {record.get('global_step')}"
        verdict = "prefers" if ok else "rejects"
        compared = tuple(sorted(best_read | current_read))
        if not compared:
            return Verdict(ok, f"{name} {verdict} this evaluation over {best} (it read no metric)")
        current_text = metrics_text(metrics, current_read)
        best_text = metrics_text(best_metrics, best_read)
        return Verdict(ok, f"{name} {verdict} {current_text} over {best} with {best_text}", compared)

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
                log_exporter_line("%s: ignoring unreadable best record %s", self._name, path)
        if record is not None and not self._matches(record):
            record = None
        # A crash between publishing a version and rewriting the record leaves the record
        # behind the versions: the better of the two is the best so far.
        record = self._reconcile(record, self._record_from_versions(base))
        if record is None:
            return None
        if self._fn_name is not None:
            log_exporter_line(
                "%s: best so far for compare_fn %s: version %s, step %s",
                self._name,
                self._fn_name,
                record.get("version"),
                record.get("global_step"),
            )
            return record
        log_exporter_line(
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
            if from_versions is not None and from_versions["version"] > (
                number_or_none(record.get("version")) or 0
            ):
                return from_versions
            return record
        if record is None or (
            from_versions is not None
            and number_or_none(record.get("value")) is not None
            and self._better(from_versions["value"], float(record["value"]))
        ):
            record = from_versions
        if record is None:
            return None
        value = number_or_none(record.get("value"))
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
        log_exporter_line(
            "%s: best so far from the evaluations in %s: %s at step %d",
            self._name,
            self._event_file_pattern,
            chosen,
            best.step,
        )
        return {**seeded, "source": self._event_file_pattern, "metrics": dict(best.metrics)}

    def _best_of(self, evaluations: list[EvalRecord]) -> EvalRecord | None:
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
            log_exporter_line(
                "%s: best record was chosen by %s, this exporter chooses by %s: starting afresh",
                self._name,
                ranking_text(theirs),
                ranking_text(ours),
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
            value = number_or_none(v.metadata["exporter"].get("value"))
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
        verdict: Verdict,
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
            value = None if self._fn_name else number_or_none(v.metadata.get("exporter", {}).get("value"))
            if value is None or not math.isfinite(value):
                return (math.inf, -v.number)
            return (-value if self._mode == "max" else value, -v.number)

        protect = {newest, int(record.get("version") or newest)}
        self._gc(base, sorted(ours, key=rank), self._keep, protect)


# Users import it from ``tfship.exporters``: reprs and messages name it there.
BestExporter.__module__ = "tfship.exporters"
