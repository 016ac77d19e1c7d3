"""``train_and_evaluate`` around the schema-driven Estimator, with exports and a summary."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tfship._tf import estimator, tf
from tfship.errors import InputError, TrainError
from tfship.schema import Schema
from tfship.trainer._input import InputConfig, make_input_fn
from tfship.trainer._model import ModelConfig, make_model_fn

logger = logging.getLogger(__name__)

TRAINER_FILE = "trainer.json"
EXPORT_KINDS = ("best", "latest", "final")


@dataclass(frozen=True)
class RunOptions:
    """How long to train, how often to checkpoint, evaluate and log.

    Example:
        >>> RunOptions(max_steps=200).checkpoint_every
        100
    """

    max_steps: int = 1000
    checkpoint_every: int = 100
    keep_checkpoints: int = 5
    log_every: int = 50
    seed: int = 42
    eval_throttle_secs: int = 0
    exports: tuple[str, ...] = ("best", "latest", "final")
    best_metric: str = "loss"
    best_mode: str = "auto"
    keep_latest: int = 3
    receiver: str = "both"
    warm_start_from: str | None = None


@dataclass
class TrainResult:
    """What a training run produced: final metrics, the last checkpoint and the exports."""

    model_dir: str
    metrics: dict[str, float]
    global_step: int
    checkpoint: str | None
    exports: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``tfship train --json``)."""
        return asdict(self)


def build_estimator(
    schema: Schema | None,
    model_dir: str | os.PathLike[str],
    config: Mapping[str, Any] | None = None,
    *,
    run: RunOptions | None = None,
) -> Any:
    """The ``tf.estimator.Estimator`` for a schema and model config.

    With ``schema`` or ``config`` left out, they are read back from the ``trainer.json``
    that training wrote into ``model_dir``, so a model directory can be exported or
    evaluated again without the training command line.

    Raises:
        InputError: a needed part is neither given nor recorded in ``model_dir``.
    """
    saved = read_trainer_file(model_dir)
    if schema is None:
        if saved is None:
            raise InputError(f"{model_dir} has no {TRAINER_FILE}: pass the schema explicitly")
        schema = Schema.from_dict(saved["schema"])
    model_config = ModelConfig.from_dict(config if config is not None else (saved or {}).get("model", {}))
    run = run or RunOptions()
    est = estimator()
    run_config = est.RunConfig(
        model_dir=str(model_dir),
        tf_random_seed=run.seed,
        save_checkpoints_steps=run.checkpoint_every,
        save_checkpoints_secs=None,
        keep_checkpoint_max=run.keep_checkpoints,
        log_step_count_steps=run.log_every,
        save_summary_steps=run.log_every,
    )
    warm = est.WarmStartSettings(run.warm_start_from) if run.warm_start_from else None
    return est.Estimator(
        model_fn=make_model_fn(schema, model_config, run.seed), config=run_config, warm_start_from=warm
    )


def read_trainer_file(model_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The schema and model config a training run recorded in its model directory, if any."""
    path = Path(model_dir) / TRAINER_FILE
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _write_trainer_file(model_dir: Path, schema: Schema, config: ModelConfig) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    tmp = model_dir / f".{TRAINER_FILE}.tmp"
    payload = {"schema": schema.to_dict(), "model": config.to_dict()}
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(model_dir / TRAINER_FILE)


def _make_exporters(schema: Schema, run: RunOptions) -> list[Any]:
    from tfship.exporters import standard_exporters

    unknown = set(run.exports) - set(EXPORT_KINDS)
    if unknown:
        raise InputError(f"unknown export kinds {sorted(unknown)}; choose from {list(EXPORT_KINDS)}")
    exporters: list[Any] = standard_exporters(
        schema,
        run.exports,
        receiver=run.receiver,
        metric=run.best_metric,
        mode=run.best_mode,
        keep_latest=run.keep_latest,
    )
    return exporters


class _ProgressHook:
    """Logs step, loss and steps/s every N steps (TensorFlow's own logging is silenced)."""

    def __new__(cls, every: int) -> Any:
        t = tf()

        class Hook(t.estimator.SessionRunHook):  # type: ignore[misc,name-defined]
            def begin(self) -> None:
                self._step = t.compat.v1.train.get_global_step()
                self._loss = t.compat.v1.get_collection(t.compat.v1.GraphKeys.LOSSES)
                self._last = time.monotonic()
                self._last_step = 0

            def before_run(self, run_context: Any) -> Any:
                return t.estimator.SessionRunArgs({"step": self._step, "loss": self._loss})

            def after_run(self, run_context: Any, run_values: Any) -> None:
                step = int(run_values.results["step"])
                if step - self._last_step >= every:
                    now = time.monotonic()
                    rate = (step - self._last_step) / max(now - self._last, 1e-9)
                    losses = run_values.results["loss"]
                    loss = f" loss {float(losses[0].mean()):.4f}" if losses else ""
                    logger.info("step %d%s (%.0f steps/s)", step, loss, rate)
                    self._last, self._last_step = now, step

        return Hook()


def train(
    schema: Schema,
    model_dir: str | os.PathLike[str],
    train_files: Sequence[str],
    eval_files: Sequence[str],
    *,
    model: ModelConfig | None = None,
    inputs: InputConfig | None = None,
    run: RunOptions | None = None,
) -> TrainResult:
    """Train and evaluate an Estimator for the schema, exporting as ``run.exports`` asks.

    Example:
        >>> result = train(schema, "/tmp/m", ["train.csv"], ["eval.csv"],
        ...                run=RunOptions(max_steps=100))            # doctest: +SKIP
        >>> sorted(result.exports)                                  # doctest: +SKIP
        ['best', 'final', 'latest']
    """
    model = model or ModelConfig()
    inputs = inputs or InputConfig()
    run = run or RunOptions()
    started = time.monotonic()
    model_path = Path(model_dir)
    _write_trainer_file(model_path, schema, model)
    est = estimator()
    estimator_obj = build_estimator(schema, model_path, model.to_dict(), run=run)
    train_spec = est.TrainSpec(
        make_input_fn(schema, train_files, inputs, training=True),
        max_steps=run.max_steps,
        hooks=[_ProgressHook(run.log_every)],
    )
    eval_inputs = InputConfig(**{**asdict(inputs), "epochs": 1})
    exporters = _make_exporters(schema, run)
    eval_spec = est.EvalSpec(
        make_input_fn(schema, eval_files, eval_inputs, training=False),
        steps=None,
        exporters=exporters,
        start_delay_secs=0,
        throttle_secs=run.eval_throttle_secs,
    )
    try:
        metrics, _ = est.train_and_evaluate(estimator_obj, train_spec, eval_spec)
        from tfship.exporters import run_final_exports

        # A final export even when the last evaluation did not trigger one; no-op otherwise.
        run_final_exports(estimator_obj, exporters)
    except tf().errors.InvalidArgumentError as exc:
        raise TrainError(f"training failed on bad input: {exc.message.splitlines()[0]}") from None
    return TrainResult(
        model_dir=str(model_path),
        metrics={k: float(v) for k, v in (metrics or {}).items() if k != "global_step"},
        global_step=int((metrics or {}).get("global_step", 0)),
        checkpoint=estimator_obj.latest_checkpoint(),
        exports=_list_exports(model_path),
        seconds=round(time.monotonic() - started, 2),
    )


def _list_exports(model_dir: Path) -> dict[str, list[str]]:
    root = model_dir / "export"
    if not root.is_dir():
        return {}
    return {
        d.name: sorted(str(v) for v in d.iterdir() if v.name.isdigit())
        for d in sorted(root.iterdir())
        if d.is_dir()
    }
