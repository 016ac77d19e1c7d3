"""Evaluation history from a model directory's event files, and the best checkpoint in it.

An Estimator writes each evaluation's metrics as scalar summaries at the evaluated global step,
under ``<model_dir>/eval`` or, for a named ``EvalSpec``, ``<model_dir>/eval_<name>``.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfship._tf import tf
from tfship.errors import InputError
from tfship.exporters._errors import CheckpointNotFoundError, MetricNotFoundError

logger = logging.getLogger("tfship.exporters")


MODES = ("min", "max", "auto")
_MAX_HINTS = ("auc", "acc", "precision", "recall", "f1", "fmeasure", "map", "ndcg", "r2")


def resolve_mode(metric: str, mode: str) -> str:
    """``min`` or ``max`` for ``metric``; ``auto`` means max for auc/accuracy-like names.

    Example:
        >>> resolve_mode("auc_precision_recall", "auto"), resolve_mode("average_loss", "auto")
        ('max', 'min')
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode != "auto":
        return mode
    leaf = metric.rsplit("/", 1)[-1].lower()
    if "loss" in leaf or "error" in leaf:
        return "min"
    return "max" if any(h in leaf for h in _MAX_HINTS) else "min"


def fmt(value: float | None) -> str:
    """A metric value as it appears in log lines (6 significant digits)."""
    return "none" if value is None else f"{value:.6g}"


@dataclass(frozen=True)
class EvalRecord:
    """The metrics of one evaluation at one global step.

    Example:
        >>> EvalRecord(400, {"auc": 0.9}, "eval").metrics["auc"]
        0.9
    """

    step: int
    metrics: dict[str, float]
    eval_dir: str


def eval_dirs(model_dir: str | os.PathLike[str]) -> list[Path]:
    """The evaluation directories of a model dir: ``eval`` and every ``eval_<name>``."""
    root = Path(os.fspath(model_dir))
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.iterdir() if p.is_dir() and (p.name == "eval" or p.name.startswith("eval_"))
    )


def read_eval_history(model_dir: str | os.PathLike[str], eval_name: str | None = None) -> list[EvalRecord]:
    """Every evaluation recorded in the model dir's event files, by step.

    Args:
        model_dir: the Estimator's model directory.
        eval_name: the ``EvalSpec`` name (``None``: the only evaluation directory, or ``eval``).

    Raises:
        InputError: no evaluation directory, or several and ``eval_name`` not given.

    Example:
        >>> import tensorflow as tf
        >>> with tf.summary.create_file_writer("model/eval").as_default():
        ...     for step, auc in ((100, 0.81), (200, 0.86)):
        ...         _ = tf.summary.scalar("auc", auc, step=step)
        >>> [(r.step, round(r.metrics["auc"], 2)) for r in read_eval_history("model")]
        [(100, 0.81), (200, 0.86)]
    """
    directory = _pick_eval_dir(Path(os.fspath(model_dir)), eval_name)
    return _history(sorted(str(p) for p in directory.glob("events.out.tfevents.*")), directory.name)


def read_event_files(model_dir: str | os.PathLike[str], pattern: str) -> list[EvalRecord]:
    """The evaluations in the event files matching ``pattern`` under the model dir, by step.

    ``pattern`` is what ``tf.estimator.BestExporter`` calls ``event_file_pattern``, e.g.
    ``eval/*.tfevents.*``; no matching file gives no evaluation.

    Example:
        >>> import tensorflow as tf
        >>> with tf.summary.create_file_writer("model/eval_holdout").as_default():
        ...     for step, auc in ((100, 0.81), (200, 0.86)):
        ...         _ = tf.summary.scalar("auc", auc, step=step)
        >>> [r.step for r in read_event_files("model", "eval_holdout/*.tfevents.*")]
        [100, 200]
    """
    files = sorted(tf().io.gfile.glob(os.path.join(os.fspath(model_dir), pattern)))
    return _history(files, pattern)


def _history(files: list[str], label: str) -> list[EvalRecord]:
    by_step: dict[int, dict[str, float]] = {}
    for path in files:
        for event in tf().compat.v1.train.summary_iterator(path):
            values = _scalars(event)
            if values:
                by_step.setdefault(int(event.step), {}).update(values)
    return [EvalRecord(step, m, label) for step, m in sorted(by_step.items())]


def best_checkpoint(
    model_dir: str | os.PathLike[str],
    metric: str,
    mode: str = "auto",
    eval_name: str | None = None,
) -> tuple[str, EvalRecord]:
    """The best evaluated checkpoint that still exists, by ``metric`` and ``mode``.

    NaN and infinite values are never best. Returns ``(checkpoint_path, eval_record)``.

    Raises:
        MetricNotFoundError: the metric was never evaluated (lists those that were).
        CheckpointNotFoundError: none of the evaluated checkpoints exists any more.

    Example:
        >>> import tensorflow as tf
        >>> with tf.summary.create_file_writer("model/eval").as_default():
        ...     for step, auc in ((100, 0.81), (200, 0.86)):
        ...         _ = tf.summary.scalar("auc", auc, step=step)
        >>> for step in (100, 200):
        ...     _ = tf.train.Checkpoint(v=tf.Variable(1.0)).write(f"model/model.ckpt-{step}")
        >>> path, record = best_checkpoint("model", "auc", "max")
        >>> path, record.step
        ('model/model.ckpt-200', 200)
    """

    resolved = resolve_mode(metric, mode)
    history = read_eval_history(model_dir, eval_name)
    scored = [r for r in history if metric in r.metrics]
    if not scored:
        names = {k for r in history for k in r.metrics}
        raise MetricNotFoundError(metric, names, where=f"the evaluations of {model_dir}")
    finite = [r for r in scored if math.isfinite(r.metrics[metric])]
    sign = -1.0 if resolved == "max" else 1.0
    finite.sort(key=lambda r: (sign * r.metrics[metric], r.step))
    root = Path(os.fspath(model_dir))
    for record in finite:
        ckpt = root / f"model.ckpt-{record.step}"
        if Path(f"{ckpt}.index").exists():
            if record is not finite[0]:
                logger.info(
                    "best %s %s at step %d has no checkpoint any more; using step %d",
                    metric,
                    fmt(finite[0].metrics[metric]),
                    finite[0].step,
                    record.step,
                )
            return str(ckpt), record
    steps = ", ".join(str(r.step) for r in scored)
    raise CheckpointNotFoundError(
        f"no checkpoint left for any evaluated step of {metric} (steps {steps}) in {model_dir}",
        path=str(model_dir),
    )


def _pick_eval_dir(root: Path, eval_name: str | None) -> Path:
    dirs = eval_dirs(root)
    names = [d.name for d in dirs]
    if eval_name is not None:
        wanted = "eval" if eval_name in ("", "eval") else f"eval_{eval_name}"
        if wanted not in names:
            raise InputError(
                f"no evaluation directory {wanted!r} in {root}; found: {', '.join(names) or '(none)'}"
            )
        return root / wanted
    if not dirs:
        raise InputError(f"no evaluation directory (eval or eval_<name>) in {root}")
    if len(dirs) == 1:
        return dirs[0]
    if "eval" in names:
        return root / "eval"
    raise InputError(f"several evaluation directories in {root}: {', '.join(names)}; choose one by its name")


def _scalars(event: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    if not event.HasField("summary"):
        return out
    for value in event.summary.value:
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            out[value.tag] = float(value.simple_value)
        elif kind == "tensor" and value.tensor.dtype in (1, 2) and not value.tensor.tensor_shape.dim:
            out[value.tag] = float(tf().make_ndarray(value.tensor))
    return out
