"""The six checks of a promotion, each a pure function of what was measured.

Each returns a ``Check``: a verdict (``pass``, ``fail`` or ``skip`` when there is nothing to
compare with), one line with its numbers, and the numbers themselves for ``--json``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship.errors import InputError

PASS, FAIL, SKIP = "pass", "fail", "skip"
NO_BASELINE = "no baseline"


@dataclass
class Check:
    """One check's verdict, its line, and its numbers.

    Example:
        >>> Check("ready", "pass", "no errors").line()
        'ready         pass  no errors'
    """

    name: str
    verdict: str
    summary: str
    numbers: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether this check blocks the promotion."""
        return self.verdict == FAIL

    def line(self) -> str:
        """The one line a person reads."""
        return f"{self.name:<13} {self.verdict:<5} {self.summary}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "check": self.name,
            "verdict": self.verdict,
            "summary": self.summary,
            "numbers": self.numbers,
            "notes": self.notes,
        }


# ------------------------------------------------------------------------------ thresholds


class MetricNotMeasuredError(InputError):
    """Raised when a threshold names a metric that was not measured; lists those that were."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind  # "value" or "change"


_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_THRESHOLD = re.compile(r"^\s*([A-Za-z_][\w/.-]*)\s*(>=|<=|>|<)\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class Threshold:
    """``metric OP value``: a value threshold on the candidate, or a change threshold on
    candidate minus baseline (TFMA's two kinds).

    Example:
        >>> Threshold.parse("accuracy>=0.9").holds(0.93)
        True
    """

    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Threshold:
        """Read ``accuracy>=0.9``; a malformed one raises ``ValueError`` saying the form."""
        match = _THRESHOLD.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not METRIC>=VALUE (or <=, >, <), e.g. accuracy>=0.9")
        return cls(match.group(1), match.group(2), float(match.group(3)))

    def holds(self, measured: float) -> bool:
        """Whether ``measured`` meets it."""
        return _OPERATORS[self.op](measured, self.value)

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


# ------------------------------------------------------------------------------ same answers


@dataclass
class OutputComparison:
    """Baseline against candidate on one output over every replayed row."""

    output: str
    rows: int
    agreement: float | None
    max_abs_diff: float | None
    max_rel_diff: float | None
    mean_shift: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {k: v for k, v in self.__dict__.items()}


def _is_float(array: NDArray[Any]) -> bool:
    return bool(np.issubdtype(array.dtype, np.floating))


def compare_output(name: str, base: NDArray[Any], cand: NDArray[Any]) -> OutputComparison:
    """Class agreement (argmax of a score matrix, or equality of other values), and the max
    absolute and relative difference and the mean shift of float outputs."""
    rows = int(base.shape[0]) if base.ndim else 1
    if base.shape != cand.shape:
        return OutputComparison(name, rows, 0.0, None, None, None)
    if not _is_float(base):
        flat_b, flat_c = base.reshape(rows, -1), cand.reshape(rows, -1)
        same = float(np.mean(np.all(flat_b == flat_c, axis=1))) if rows else 1.0
        return OutputComparison(name, rows, same, None, None, None)
    b, c = base.astype(np.float64), cand.astype(np.float64)
    diff = np.abs(b - c)
    rel = diff / np.maximum(np.abs(b), 1e-6)
    agreement: float | None = None
    if b.ndim == 2 and b.shape[1] > 1:
        agreement = float(np.mean(np.argmax(b, axis=1) == np.argmax(c, axis=1)))
    return OutputComparison(
        name,
        rows,
        agreement,
        float(diff.max()) if diff.size else 0.0,
        float(rel.max()) if rel.size else 0.0,
        float(np.max(np.abs(c.mean(axis=0) - b.mean(axis=0)))) if b.size else 0.0,
    )


def compare_classes(base: Mapping[str, Any], cand: Mapping[str, Any]) -> OutputComparison | None:
    """Agreement of the class each model picks, when its outputs carry classes and scores side
    by side (a Classify signature tiles every class name in ``classes``: those always agree)."""
    classes, scores = base.get("classes"), base.get("scores")
    if classes is None or scores is None or classes.shape != scores.shape or classes.ndim != 2:
        return None
    if cand.get("classes") is None or cand.get("scores") is None or cand["scores"].shape != scores.shape:
        return None
    picked_b, picked_c = predicted_classes(base), predicted_classes(cand)
    if picked_b is None or picked_c is None:  # not so: both carry classes
        return None
    agreement = float(np.mean(picked_b == picked_c)) if len(picked_b) else 1.0
    return OutputComparison("classes", len(picked_b), agreement, None, None, None)


def same_answers(
    comparisons: Sequence[OutputComparison],
    *,
    min_agreement: float,
    max_diff: float,
    over: str | None = None,
) -> Check:
    """Fail when any output agrees on fewer rows than ``min_agreement`` or differs by more
    than ``max_diff``; the line names the worst output, after ``over`` (what was compared;
    default: the number of rows)."""
    worst_agree = min(
        (c for c in comparisons if c.agreement is not None), key=lambda c: c.agreement or 0.0, default=None
    )
    worst_diff = max(
        (c for c in comparisons if c.max_abs_diff is not None),
        key=lambda c: c.max_abs_diff or 0.0,
        default=None,
    )
    failures = []
    parts = []
    if worst_agree is not None and worst_agree.agreement is not None:
        parts.append(f"agreement {worst_agree.agreement:.2%} ({worst_agree.output}, min {min_agreement:.2%})")
        failures += [c.output for c in comparisons if c.agreement is not None and c.agreement < min_agreement]
    if worst_diff is not None and worst_diff.max_abs_diff is not None:
        parts.append(
            f"max diff {worst_diff.max_abs_diff:.4g} ({worst_diff.output}, max {max_diff:g}), "
            f"rel {worst_diff.max_rel_diff:.3g}, mean shift {worst_diff.mean_shift:.3g}"
        )
        failures += [
            c.output for c in comparisons if c.max_abs_diff is not None and c.max_abs_diff > max_diff
        ]
    rows = comparisons[0].rows if comparisons else 0
    summary = f"{over or f'{rows} rows'}: " + "; ".join(parts)
    if failures:
        summary += f"; differs on {', '.join(sorted(set(failures)))}"
    numbers = {
        "rows": rows,
        "min_agreement": min_agreement,
        "max_diff": max_diff,
        "outputs": [c.to_dict() for c in comparisons],
    }
    return Check("same answers", FAIL if failures else PASS, summary, numbers)


# ------------------------------------------------------------------------------ as good


def as_good(
    candidate: Mapping[str, float],
    baseline: Mapping[str, float] | None,
    *,
    values: Sequence[Threshold],
    changes: Sequence[Threshold],
    source: str,
) -> Check:
    """TFMA's value thresholds (on the candidate) and change thresholds (candidate - baseline).

    Raises:
        InputError: a threshold names a metric that was not measured; lists those that were.
    """
    measured = sorted(candidate)
    for kind, given in (("value", values), ("change", changes)):
        for threshold in given:
            if threshold.metric not in candidate or (
                kind == "change" and baseline is not None and threshold.metric not in baseline
            ):
                raise MetricNotMeasuredError(
                    f"{threshold}: no metric {threshold.metric!r} measured on both models "
                    f"({source}); measured: {', '.join(measured) or 'none'}",
                    kind=kind,
                )
    failed = [str(t) for t in values if not t.holds(candidate[t.metric])]
    notes = []
    if changes and baseline is None:
        notes.append("change thresholds skipped: no baseline")
    elif baseline is not None:
        failed += [f"change {t}" for t in changes if not t.holds(candidate[t.metric] - baseline[t.metric])]
    shown = []
    for name in measured:
        text = f"{name} {candidate[name]:.4g}"
        if baseline is not None and name in baseline:
            text += f" (baseline {baseline[name]:.4g}, {candidate[name] - baseline[name]:+.4g})"
        shown.append(text)
    if not values and not changes:
        notes.append("no thresholds given: the metrics are shown, nothing is required of them")
    summary = f"{source}: " + ("; ".join(shown) or "no metrics")
    if failed:
        summary += f"; not met: {', '.join(failed)}"
    numbers = {
        "source": source,
        "candidate": dict(candidate),
        "baseline": dict(baseline) if baseline is not None else None,
        "thresholds": [str(t) for t in values],
        "changes": [str(t) for t in changes],
    }
    return Check("as good", FAIL if failed else PASS, summary, numbers, notes)


def eval_metrics(outputs: Mapping[str, Any], labels: Sequence[Any]) -> dict[str, float]:
    """Metrics of one model's outputs against labels: ``accuracy`` for a classifier (the class
    of the highest score, or its ``classes`` output), ``mean_absolute_error`` for a regressor."""
    predicted = predicted_classes(outputs)
    if predicted is not None:
        truth = np.array([_text(v) for v in labels], dtype=object)
        return {"accuracy": float(np.mean(predicted == truth))}
    for key in ("outputs", "predictions", "values"):
        if key in outputs and _is_float(outputs[key]):
            values = outputs[key].reshape(len(labels), -1)[:, 0].astype(np.float64)
            truth_f = np.array([float(v) for v in labels])
            return {"mean_absolute_error": float(np.mean(np.abs(values - truth_f)))}
    raise InputError(
        "cannot tell a class or a value from the outputs "
        f"{', '.join(sorted(outputs))}: expected scores and classes, classes, or outputs"
    )


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def predicted_classes(outputs: Mapping[str, Any]) -> NDArray[np.object_] | None:
    """Each row's class: the ``classes`` entry of the highest score, or the one ``classes``
    column, or the index of the highest score; ``None`` when the outputs name no class."""
    classes = outputs.get("classes")
    scores = outputs.get("scores", outputs.get("probabilities"))
    if classes is not None and scores is not None and classes.shape == scores.shape and classes.ndim == 2:
        picked = classes[np.arange(len(classes)), np.argmax(scores, axis=1)]
        return np.array([_text(v) for v in picked], dtype=object)
    if classes is not None:
        return np.array([_text(v) for v in classes.reshape(len(classes), -1)[:, 0]], dtype=object)
    if scores is not None and scores.ndim == 2:
        return np.array([str(i) for i in np.argmax(scores, axis=1)], dtype=object)
    return None


# ------------------------------------------------------------------------------ as fast


def percentile_ms(samples: Sequence[float], q: float) -> float:
    """The ``q`` percentile of ``samples`` (seconds) in milliseconds."""
    return float(np.percentile(np.asarray(samples) * 1000.0, q))


def as_fast(
    latencies: Mapping[int, Mapping[str, Sequence[float]]],
    *,
    max_ratio: float,
    over: str | None = None,
) -> Check:
    """Fail when the candidate's median latency at any batch size is above ``max_ratio`` times
    the baseline's (p99 is shown; over a short run it is too noisy to decide on). The line
    starts with ``over``, which requests were timed, when given."""
    parts, failed, numbers = [], [], {}
    for size, by_model in sorted(latencies.items()):
        base, cand = by_model["baseline"], by_model["candidate"]
        row = {
            "baseline_p50_ms": percentile_ms(base, 50),
            "baseline_p99_ms": percentile_ms(base, 99),
            "candidate_p50_ms": percentile_ms(cand, 50),
            "candidate_p99_ms": percentile_ms(cand, 99),
            "calls": len(cand),
        }
        row["ratio_p50"] = row["candidate_p50_ms"] / max(row["baseline_p50_ms"], 1e-9)
        row["ratio_p99"] = row["candidate_p99_ms"] / max(row["baseline_p99_ms"], 1e-9)
        numbers[str(size)] = row
        parts.append(
            f"batch {size}: p50 {row['candidate_p50_ms']:.2f} ms vs {row['baseline_p50_ms']:.2f} "
            f"(x{row['ratio_p50']:.2f}), p99 {row['candidate_p99_ms']:.2f} vs {row['baseline_p99_ms']:.2f}"
        )
        if row["ratio_p50"] > max_ratio:
            failed.append(str(size))
    summary = (f"{over}: " if over else "") + "; ".join(parts)
    if failed:
        summary += f"; slower than x{max_ratio:g} at batch {', '.join(failed)}"
    return Check("as fast", FAIL if failed else PASS, summary, {"max_ratio": max_ratio, "batches": numbers})


def skipped(name: str, why: str = NO_BASELINE) -> Check:
    """A check with nothing to compare with."""
    return Check(name, SKIP, why)
