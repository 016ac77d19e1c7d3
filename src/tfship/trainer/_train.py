"""``train_and_evaluate`` around the schema-driven Estimator, with exports and a summary."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

from tfship._files import write_atomically
from tfship._tf import estimator, tf, tf_error_cause
from tfship._wire import version_dirs
from tfship.errors import InputError, TrainError
from tfship.schema import Schema
from tfship.trainer._cluster import (
    ClusterError,
    ClusterTask,
    Shard,
    Watchdog,
    latest_checkpoint_step,
    read_tf_config,
    server_error,
    training_finished,
    write_note,
)
from tfship.trainer._input import InputOptions, build_input_fn
from tfship.trainer._model import ModelOptions, build_model_fn

logger = logging.getLogger(__name__)

TRAINER_FILE = "trainer.json"
"""The file in a model directory that records how the trainer trained it (read by ``read_trainer_file``)."""
EXPORT_KINDS = ("best", "latest", "final")
"""The exporters a training run attaches, by the name of their export directory."""


@dataclass(frozen=True)
class RunOptions:
    """How long to train, how often to checkpoint, evaluate and log.

    In a TF_CONFIG cluster, ``worker_delay_secs`` caps the start-up delay of workers
    (TensorFlow's default: 5 s per worker index, at most 60), ``startup_timeout_secs`` bounds
    the wait for peer tasks, and ``cluster_grace_secs`` is how long a ps or a lagging worker
    stays once the chief has finished.

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
    worker_delay_secs: int | None = None
    startup_timeout_secs: float = 300.0
    cluster_grace_secs: float = 10.0

    def __post_init__(self) -> None:
        unknown = [k for k in self.exports if k not in EXPORT_KINDS]
        if unknown:
            raise ValueError(f"unknown export kinds {unknown}; choose from {list(EXPORT_KINDS)}")
        if self.receiver not in ("parsing", "raw", "both"):
            raise ValueError(f"receiver {self.receiver!r} is not one of ['parsing', 'raw', 'both']")
        if self.max_steps < 1:
            raise ValueError(f"max steps must be at least 1, found {self.max_steps}")


@dataclass
class TrainResult:
    """What a training run produced: final metrics, the last checkpoint and the exports.

    In a cluster, ``task`` names the task (``chief 0``); ``notes`` says what it could not do.
    ``start_step`` is the step the run started from (a resumed model's), when known.
    """

    model_dir: str
    metrics: dict[str, float]
    global_step: int
    checkpoint: str | None
    exports: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0
    task: str | None = None
    notes: list[str] = field(default_factory=list)
    start_step: int | None = None

    @property
    def steps_trained(self) -> int | None:
        """Steps this run trained, when its start is known."""
        return None if self.start_step is None else self.global_step - self.start_step

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``tfship train --json``); ``task``, ``notes`` and ``start_step``
        only when set."""
        out = asdict(self)
        for key in ("task", "notes"):
            if not out[key]:
                del out[key]
        if out["start_step"] is None:
            del out["start_step"]
        return out


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
    model_config = ModelOptions.from_dict(config if config is not None else (saved or {}).get("model", {}))
    run = run or RunOptions()
    est = estimator()
    # RunConfig reads TF_CONFIG itself: the task, the cluster, and where variables live.
    run_config = est.RunConfig(
        model_dir=str(model_dir),
        tf_random_seed=run.seed,
        save_checkpoints_steps=run.checkpoint_every,
        save_checkpoints_secs=None,
        keep_checkpoint_max=run.keep_checkpoints,
        log_step_count_steps=run.log_every,
        save_summary_steps=run.log_every,
        experimental_max_worker_delay_secs=run.worker_delay_secs,
    )
    warm = est.WarmStartSettings(run.warm_start_from) if run.warm_start_from else None
    return est.Estimator(
        model_fn=build_model_fn(schema, model_config, run.seed), config=run_config, warm_start_from=warm
    )


def read_trainer_file(model_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The schema, model config and receiver a training run recorded in its model directory,
    if any (a directory trained before the receiver was recorded has no ``receiver``)."""
    path = Path(model_dir) / TRAINER_FILE
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _write_trainer_file(model_dir: Path, schema: Schema, config: ModelOptions, receiver: str) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    # the receiver lets a later export give the signatures the training's exports have
    payload = {"schema": schema.to_dict(), "model": config.to_dict(), "receiver": receiver}
    write_atomically(model_dir / TRAINER_FILE, json.dumps(payload, indent=2) + "\n")


def _make_exporters(schema: Schema, run: RunOptions) -> list[Any]:
    from tfship.exporters._shared import standard_exporters

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
    """Logs step, loss and steps/s every N steps (TensorFlow's own logging is silenced).

    ``seen["step"]`` keeps the last global step this process saw.
    """

    def __new__(cls, every: int, seen: dict[str, int] | None = None) -> Any:
        last: dict[str, int] = {} if seen is None else seen
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
                last["step"] = step
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
    model: ModelOptions | None = None,
    inputs: InputOptions | None = None,
    run: RunOptions | None = None,
) -> TrainResult:
    """Train and evaluate an Estimator for the schema, exporting as ``run.exports`` asks.

    With a ``TF_CONFIG`` cluster in the environment this process runs its one task (see
    ``tfship.trainer._cluster``): the chief and workers train on their shares of the data, a
    ps serves variables until the chief has finished, the evaluator evaluates and exports.

    Example:
        >>> from tfship.data import infer_schema, penguins_split
        >>> train_csv, eval_csv = penguins_split("data")
        >>> schema = infer_schema(train_csv, label="species")
        >>> result = train(schema, "model", [str(train_csv)], [str(eval_csv)],
        ...                run=RunOptions(max_steps=20, exports=("final",)))
        >>> sorted(result.exports), sorted(result.metrics)
        (['final'], ['accuracy', 'average_loss', 'loss'])
    """
    job = _Job(
        schema,
        Path(model_dir),
        train_files,
        eval_files,
        model or ModelOptions(),
        inputs or InputOptions(),
        run or RunOptions(),
    )
    task = read_tf_config()
    if task is None:
        return job.local()
    logger.info("%s", task.describe(model_dir))
    if task.task_type == "ps":
        return job.ps(task)
    return job.cluster(task)


@dataclass
class _Job:
    """One ``train`` call: the parts every task type builds the same way."""

    schema: Schema
    model_dir: Path
    train_files: Sequence[str]
    eval_files: Sequence[str]
    model: ModelOptions
    inputs: InputOptions
    run: RunOptions
    started: float = field(default_factory=time.monotonic)

    def local(self) -> TrainResult:
        self.model.check(self.schema)
        check_model_dir(self.model_dir, self.schema, self.model)
        step = checkpoint_step_of(self.model_dir)
        if step is not None and step >= self.run.max_steps:
            return self._nothing_to_do(step)
        before = list_exports(self.model_dir)
        # Everything that can refuse the inputs does so before the first write.
        train_spec, exporters = self._train_spec(None, {}), _make_exporters(self.schema, self.run)
        eval_spec = self._eval_spec(exporters)
        fresh = not self.model_dir.exists()
        try:
            _write_trainer_file(self.model_dir, self.schema, self.model, self.run.receiver)
            estimator_obj = self._estimator()
            metrics = self._train_and_evaluate(estimator_obj, train_spec, eval_spec)
        except BaseException:
            if fresh and not checkpoint_step_of(self.model_dir):  # no step trained
                shutil.rmtree(self.model_dir, ignore_errors=True)  # a failed start leaves nothing
            raise
        self._final_exports(estimator_obj, exporters)
        result = self._result(estimator_obj, metrics or {})
        result.exports = _new_exports(before, result.exports)
        result.start_step = step or 0
        return result

    def _nothing_to_do(self, step: int) -> TrainResult:
        """A model already at its last step: say so, train nothing, list no old export as new."""
        return TrainResult(
            model_dir=str(self.model_dir),
            metrics={},
            global_step=step,
            checkpoint=tf().train.latest_checkpoint(str(self.model_dir)),
            seconds=round(time.monotonic() - self.started, 2),
            start_step=step,
            notes=[
                f"the model is already at step {step} of {self.run.max_steps}: nothing was "
                f"trained; a larger max steps continues it"
            ],
        )

    def cluster(self, task: ClusterTask) -> TrainResult:
        self.model.check(self.schema)
        if task.task_type == "chief":
            _write_trainer_file(self.model_dir, self.schema, self.model, self.run.receiver)
        watchdog = self._watchdog(task)
        watchdog.start()
        try:
            return self._cluster_task(task)
        finally:
            watchdog.stop()

    def _cluster_task(self, task: ClusterTask) -> TrainResult:
        estimator_obj = self._estimator()
        seen: dict[str, int] = {}
        evaluated: dict[str, Any] = {}
        evaluator = task.task_type == "evaluator"
        exporters = _make_exporters(self.schema, self.run) if evaluator else []
        shard = None
        if task.replica_index is not None:
            shard = Shard(task.replica_index, task.num_replicas)
        eval_spec = self._eval_spec([_EvalLog(evaluated), *exporters])
        if task.task_type == "worker":
            self._wait_for_chief(task)
        try:
            self._train_and_evaluate(estimator_obj, self._train_spec(shard, seen), eval_spec)
        except tf().errors.OpError as exc:
            if task.task_type != "worker" or not training_finished(self.model_dir, self.run.max_steps):
                raise TrainError(server_error(task, tf_error_cause(exc))) from None
            # The ps left once the chief had finished: this worker's last step found it gone.
            logger.info("%s: the chief finished training; %s", task.name, tf_error_cause(exc))
        if task.task_type == "chief":
            return self._chief_done(task, estimator_obj, seen)
        if task.task_type == "worker":
            write_note(
                self.model_dir,
                f"worker-{task.task_index}.json",
                {"global_step": seen.get("step", 0), "max_steps": self.run.max_steps},
            )
            return self._task_result(task, seen.get("step", 0))
        return self._evaluator_done(task, estimator_obj, exporters, evaluated)

    def _evaluator_done(
        self, task: ClusterTask, estimator_obj: Any, exporters: list[Any], evaluated: dict[str, Any]
    ) -> TrainResult:
        self._final_exports(estimator_obj, exporters)
        metrics, step = evaluated.get("metrics", {}), evaluated.get("global_step", 0)
        write_note(self.model_dir, "evaluator.json", {"metrics": metrics, "global_step": step})
        result = self._result(estimator_obj, {**metrics, "global_step": step})
        result.task = task.name
        return result

    def _chief_done(self, task: ClusterTask, estimator_obj: Any, seen: dict[str, int]) -> TrainResult:
        step = latest_checkpoint_step(self.model_dir) or seen.get("step", 0)
        write_note(
            self.model_dir,
            "chief.json",
            {
                "global_step": step,
                "max_steps": self.run.max_steps,
                "seconds": round(time.monotonic() - self.started, 2),
                "checkpoint": estimator_obj.latest_checkpoint(),
            },
        )
        notes = []
        if self.run.exports and not task.has_evaluator:
            # Exporters run only where evaluation runs: without an evaluator, the chief
            # publishes the final export itself, and it alone.
            final = _make_exporters(self.schema, replace(self.run, exports=("final",)))
            self._final_exports(estimator_obj, final)
            others = [k for k in self.run.exports if k != "final"]
            if others:
                notes.append(f"{' and '.join(others)} exports need an evaluator task; exported final only")
                logger.warning("%s", notes[-1])
        result = self._result(estimator_obj, {"global_step": step})
        result.task, result.notes = task.name, notes
        return result

    def ps(self, task: ClusterTask) -> TrainResult:
        """Serve variables until the chief has finished (TensorFlow's own ps never returns)."""
        server = _start_server(task)
        watchdog = self._watchdog(task)
        watchdog.check_peers()
        note = watchdog.wait_for_end() or {}
        # TensorFlow cannot shut a server down: it serves until this process exits.
        del server
        logger.info(
            "%s: the chief finished training at step %s; stopping", task.name, note.get("global_step")
        )
        return self._task_result(task, int(note.get("global_step", 0)))

    def _wait_for_chief(self, task: ClusterTask) -> None:
        # A worker that starts before the chief has initialised the variables polls for them
        # only every 30 s; the chief's first checkpoint says they are ready.
        deadline = time.monotonic() + self.run.startup_timeout_secs
        while latest_checkpoint_step(self.model_dir) is None:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{task.name}: chief 0 wrote no checkpoint into {self.model_dir} "
                    f"within {self.run.startup_timeout_secs:g}s"
                )
            time.sleep(0.2)

    def _watchdog(self, task: ClusterTask) -> Watchdog:
        return Watchdog(
            task,
            str(self.model_dir),
            self.run.max_steps,
            startup_timeout=self.run.startup_timeout_secs,
            grace=self.run.cluster_grace_secs,
        )

    def _task_result(self, task: ClusterTask, step: int) -> TrainResult:
        return TrainResult(
            model_dir=str(self.model_dir),
            metrics={},
            global_step=step,
            checkpoint=None,
            seconds=round(time.monotonic() - self.started, 2),
            task=task.name,
        )

    def _estimator(self) -> Any:
        return build_estimator(self.schema, self.model_dir, self.model.to_dict(), run=self.run)

    def _train_spec(self, shard: Shard | None, seen: dict[str, int]) -> Any:
        return estimator().TrainSpec(
            build_input_fn(self.schema, self.train_files, self.inputs, training=True, shard=shard),
            max_steps=self.run.max_steps,
            hooks=[_ProgressHook(self.run.log_every, seen)],
        )

    def _eval_spec(self, exporters: list[Any]) -> Any:
        eval_inputs = InputOptions(**{**asdict(self.inputs), "epochs": 1})
        return estimator().EvalSpec(
            build_input_fn(self.schema, self.eval_files, eval_inputs, training=False),
            steps=None,
            exporters=exporters,
            start_delay_secs=0,
            throttle_secs=self.run.eval_throttle_secs,
        )

    def _train_and_evaluate(self, estimator_obj: Any, train_spec: Any, eval_spec: Any) -> Any:
        try:
            result = estimator().train_and_evaluate(estimator_obj, train_spec, eval_spec)
        except tf().errors.InvalidArgumentError as exc:
            raise TrainError(f"training failed on bad input: {tf_error_cause(exc)}") from None
        # (metrics, export results) in local mode; None on every task of a cluster.
        return result[0] if result else None

    def _final_exports(self, estimator_obj: Any, exporters: list[Any]) -> None:
        from tfship.exporters import run_final_exports

        # A final export even when the last evaluation did not trigger one. An exporter that
        # already exported in this run is left out, so the log does not say it twice.
        pending = [e for e in exporters if not any(d.exported for d in getattr(e, "decisions", ()))]
        run_final_exports(estimator_obj, pending)

    def _result(self, estimator_obj: Any, metrics: Mapping[str, Any]) -> TrainResult:
        measured = {k: float(v) for k, v in metrics.items() if k != "global_step"}
        return TrainResult(
            model_dir=str(self.model_dir),
            metrics=measured,
            global_step=int(metrics.get("global_step", 0)),
            checkpoint=estimator_obj.latest_checkpoint(),
            exports=list_exports(self.model_dir),
            seconds=round(time.monotonic() - self.started, 2),
        )


def _start_server(task: ClusterTask) -> Any:
    """This ps task's gRPC server, as ``train_and_evaluate`` would start it.

    Raises:
        ClusterError: the server could not start (its port is taken, most often).
    """
    t = tf()
    cluster = t.train.ClusterSpec({job: list(a) for job, a in task.cluster.items()})
    config = t.compat.v1.ConfigProto(log_device_placement=False)
    try:
        return t.distribute.Server(
            cluster, job_name=task.task_type, task_index=task.task_index, config=config, start=True
        )
    except t.errors.OpError as exc:
        raise ClusterError(server_error(task, tf_error_cause(exc))) from None


class _EvalLog:
    """An exporter that exports nothing: it logs each evaluation and keeps the last metrics.

    ``train_and_evaluate`` hands every evaluation result to the exporters, on the evaluator
    only; placed first, its line precedes the export decisions.
    """

    def __new__(cls, sink: dict[str, Any]) -> Any:
        base = estimator().Exporter

        class EvalLog(base):  # type: ignore[misc,valid-type]
            @property
            def name(self) -> str:
                return "tfship-eval-log"

            def export(
                self,
                estimator: Any,
                export_path: str,
                checkpoint_path: str | None,
                eval_result: Mapping[str, Any] | None,
                is_the_final_export: bool,
            ) -> None:
                values = dict(eval_result or {})
                step = int(values.pop("global_step", 0))
                metrics = {k: float(v) for k, v in values.items()}
                sink.update(metrics=metrics, global_step=step)
                shown = "  ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()))
                logger.info("evaluated step %d: %s", step, shown)

        return EvalLog()


def list_exports(model_dir: str | os.PathLike[str]) -> dict[str, list[str]]:
    """The version directories under ``model_dir/export``, by exporter name."""
    root = Path(model_dir) / "export"
    if not root.is_dir():
        return {}
    return {d.name: [str(path) for _, path in version_dirs(d)] for d in sorted(root.iterdir()) if d.is_dir()}


def _new_exports(before: Mapping[str, list[str]], after: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The versions this run wrote: those in ``after`` that were not in ``before``."""
    new = {name: [v for v in versions if v not in before.get(name, [])] for name, versions in after.items()}
    return {name: versions for name, versions in new.items() if versions}


def checkpoint_step_of(model_dir: str | os.PathLike[str]) -> int | None:
    """The global step of the newest checkpoint in ``model_dir`` (from its name), or None."""
    state = Path(model_dir) / "checkpoint"
    if not state.is_file():
        return None
    latest = tf().train.latest_checkpoint(str(model_dir))
    if not latest or "-" not in latest:
        return None
    tail = latest.rsplit("-", 1)[1]
    return int(tail) if tail.isdigit() else None


def check_model_dir(model_dir: Path, schema: Schema, config: ModelOptions) -> None:
    """Refuse, before writing anything, to train into a directory that holds another model.

    A directory whose ``trainer.json`` records another schema or model, and which holds a
    checkpoint of it, would fail later with a variable mismatch (and its ``trainer.json``,
    rewritten, would no longer export the checkpoint).

    Raises:
        InputError: names the first difference.
    """
    recorded = read_trainer_file(model_dir)
    if recorded is None or checkpoint_step_of(model_dir) is None:
        return
    # the receiver shapes the exports only, not the checkpoints: training with another is fine
    recorded = {key: recorded[key] for key in ("schema", "model") if key in recorded}
    wanted = {"schema": schema.to_dict(), "model": config.to_dict()}
    difference = _first_difference(recorded, json.loads(json.dumps(wanted)))
    if difference is not None:
        raise InputError(
            f"model directory {model_dir} holds a model trained with another schema or model "
            f"({difference}); train into a new directory, or warm-start from this one"
        )


#: what a difference is named by first: the label, then the features, then the model options
_FIRST = {"schema": 0, "label": 0, "features": 1, "model": 3}


def _first_difference(old: object, new: object, where: str = "") -> str | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=lambda k: (_FIRST.get(str(k), 2), str(k))):
            if key not in old or key not in new:
                side = "only in the new" if key in new else "only in the recorded"
                return f"{where}{key}: {side} one"
            found = _first_difference(old[key], new[key], f"{where}{key}.")
            if found is not None:
                return found
        return None
    if _named(old) and _named(new):
        old_names, new_names = [a["name"] for a in old], [b["name"] for b in new]
        for name in old_names + [n for n in new_names if n not in old_names]:
            if name not in old_names or name not in new_names:
                side = "only in the new" if name in new_names else "only in the recorded"
                return f"{where}{name}: {side} one"
        if old_names != new_names:
            return f"{where.rstrip('.')}: recorded in the order {old_names}, now {new_names}"
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            label = a.get("name", i) if isinstance(a, dict) else i
            found = _first_difference(a, b, f"{where}{label}.")
            if found is not None:
                return found
        return None
    if old != new:
        return f"{where.rstrip('.')}: recorded {json.dumps(old)}, now {json.dumps(new)}"
    return None


def _named(value: object) -> TypeGuard[list[dict[str, Any]]]:
    """A list of named entries (features), compared by name."""
    return isinstance(value, list) and all(isinstance(v, dict) and "name" in v for v in value)
