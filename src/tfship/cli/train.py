"""``tfship train``: locally, as one task of a TF_CONFIG cluster, or a whole cluster on this
machine."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tfship._output import echo_json
from tfship.cli._options import file_option, flag, valued
from tfship.schema import MissingColumnError, Schema
from tfship.trainer._cluster import read_tf_config

if TYPE_CHECKING:
    from tfship.trainer import TrainResult


def _int_list(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, found {value!r}") from None


def _kinds(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


class _TrainCommand(click.Command):
    """Keeps the raw arguments: ``--local-cluster`` runs the same command line once per task."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["tfship.train.args"] = list(args)
        return super().parse_args(ctx, args)


@click.command(cls=_TrainCommand)
@click.option("--schema", "schema_path", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--train", "train_files", required=True, multiple=True, help="CSV/TFRecord file or glob.")
@click.option("--eval", "eval_files", required=True, multiple=True, help="CSV/TFRecord file or glob.")
@click.option("--model-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@valued("--model", "kind", type=click.Choice(["linear", "dnn", "two_tower"]), default="dnn")
@valued("--hidden-units", default="32,16", callback=_int_list)
@valued("--activation", default="relu")
@valued("--dropout", default=0.0, type=click.FloatRange(0.0, 1.0, max_open=True))
@click.option("--batch-norm", is_flag=True)
@valued("--tower-dim", default=16, type=click.IntRange(min=1))
@valued("--optimizer", default="adam")
@valued("--learning-rate", default=0.01, type=float)
@valued("--batch-size", default=32, type=click.IntRange(min=1))
@click.option("--epochs", default=None, type=click.IntRange(min=1), help="Default: repeat until max steps.")
@valued("--shuffle-buffer", default=1000, type=click.IntRange(min=1))
@valued("--reader-threads", default=1, type=click.IntRange(min=1))
@valued("--parser-threads", default=2, type=click.IntRange(min=1))
@valued("--prefetch", default=2, type=click.IntRange(min=1))
@valued("--max-steps", default=1000, type=click.IntRange(min=1))
@valued("--checkpoint-every", default=100, type=click.IntRange(min=1))
@valued("--keep-checkpoints", default=5, type=click.IntRange(min=1))
@valued("--log-every", default=50, type=click.IntRange(min=1))
@valued("--eval-throttle-secs", default=0, type=click.IntRange(min=0))
@valued("--seed", default=42, type=int)
@click.option("--warm-start-from", default=None, help="Checkpoint or model dir to initialise from.")
@valued(
    "--export",
    "exports",
    default="best,latest,final",
    callback=_kinds,
    help="Exporters to attach: any of best, latest, final; '' for none.",
)
@valued(
    "--receiver",
    type=click.Choice(["parsing", "raw", "both"]),
    default="both",
    help="Serving input of the exports: serialized tf.Examples, raw tensors, or both.",
)
@valued("--best-metric", default="loss")
@valued("--best-mode", type=click.Choice(["min", "max", "auto"]), default="auto")
@click.option(
    "--local-cluster",
    default=None,
    metavar="workers=N,ps=N[,evaluator=1]",
    help="Run a whole TF_CONFIG cluster on this machine: a chief plus these tasks, one process each.",
)
@click.option(
    "--worker-delay-secs",
    default=None,
    type=click.IntRange(min=0),
    help="In a cluster: cap on each worker's start-up delay (default: TensorFlow's, "
    "5 s per worker index, at most 60).",
)
@valued(
    "--cluster-timeout-secs",
    default=300.0,
    type=click.FloatRange(min=0),
    help="In a cluster: how long a task waits for the tasks it needs to answer.",
)
@flag(
    "--no-label-scaling",
    help="Learn a regression label in raw units (default: standardised by the schema's scale).",
)
@valued(
    "--max-bad-rows",
    default=0,
    type=click.IntRange(min=0),
    help="CSV rows that fail the schema's checks and may be skipped (named on stderr).",
)
@file_option(
    "--rejects",
    "rejects_path",
    default=None,
    help="JSONL file listing the skipped rows (file, line, reason).",
)
@flag(
    "--fill-missing-columns",
    help="Train on a CSV file that lacks a feature's column: every row takes the feature's "
    "default (named on stderr). Default: such a file is refused.",
)
@flag("--json", "as_json", help="Print the summary as JSON.")
@click.pass_context
def train(
    ctx: click.Context,
    schema_path: Path,
    train_files: tuple[str, ...],
    eval_files: tuple[str, ...],
    model_dir: Path,
    kind: str,
    hidden_units: tuple[int, ...],
    activation: str,
    dropout: float,
    batch_norm: bool,
    tower_dim: int,
    optimizer: str,
    learning_rate: float,
    batch_size: int,
    epochs: int | None,
    shuffle_buffer: int,
    reader_threads: int,
    parser_threads: int,
    prefetch: int,
    max_steps: int,
    checkpoint_every: int,
    keep_checkpoints: int,
    log_every: int,
    eval_throttle_secs: int,
    seed: int,
    warm_start_from: str | None,
    exports: tuple[str, ...],
    receiver: str,
    best_metric: str,
    best_mode: str,
    local_cluster: str | None,
    worker_delay_secs: int | None,
    cluster_timeout_secs: float,
    no_label_scaling: bool,
    max_bad_rows: int,
    rejects_path: Path | None,
    fill_missing_columns: bool,
    as_json: bool,
) -> None:
    """Train an Estimator (Keras model + Head) from a schema, evaluate and export it.

    With TF_CONFIG set, this process runs its one task of the cluster; with --local-cluster,
    it runs every task of a cluster on this machine, one process each.
    """
    from tfship import trainer

    schema = Schema.load(schema_path)
    try:
        model = trainer.ModelOptions(
            kind=kind,
            hidden_units=hidden_units,
            activation=activation,
            dropout=dropout,
            batch_norm=batch_norm,
            tower_dim=tower_dim,
            learning_rate=learning_rate,
            optimizer=optimizer,
            label_scaling=not no_label_scaling,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    model.check(schema)  # before TensorFlow loads and before anything is written
    inputs = trainer.InputOptions(
        batch_size=batch_size,
        epochs=epochs,
        shuffle_buffer=shuffle_buffer,
        reader_threads=reader_threads,
        parser_threads=parser_threads,
        prefetch=prefetch,
        seed=seed,
        fill_missing_columns=fill_missing_columns,
    )
    try:
        run = trainer.RunOptions(
            max_steps=max_steps,
            checkpoint_every=checkpoint_every,
            keep_checkpoints=keep_checkpoints,
            log_every=log_every,
            seed=seed,
            eval_throttle_secs=eval_throttle_secs,
            exports=exports,
            receiver=receiver,
            best_metric=best_metric,
            best_mode=best_mode,
            warm_start_from=warm_start_from,
            worker_delay_secs=worker_delay_secs,
            startup_timeout_secs=cluster_timeout_secs,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--export") from None
    if local_cluster is not None:
        from tfship.trainer._input import expand

        for patterns in (train_files, eval_files):
            expand(patterns)  # a pattern that matches nothing fails here, before any task starts
        _run_local_cluster(ctx, local_cluster, model_dir, as_json)
        return
    from tfship.trainer._launch import exit_with_parent

    exit_with_parent()
    try:
        with _checked(schema, train_files, eval_files, max_bad_rows, rejects_path, fill_missing_columns) as (
            train_set,
            eval_set,
        ):
            result = trainer.train(
                schema, model_dir, train_set, eval_set, model=model, inputs=inputs, run=run
            )
    except MissingColumnError as exc:
        raise exc.with_option("--fill-missing-columns") from None
    if as_json:
        echo_json(result.to_dict())
        return
    if result.steps_trained == 0:
        click.echo(f"model already at step {result.global_step}; raise --max-steps to continue")
        click.echo(f"checkpoint  {result.checkpoint}")
        return
    echo_summary(result)


@contextmanager
def _checked(
    schema: Schema,
    train_files: tuple[str, ...],
    eval_files: tuple[str, ...],
    max_bad_rows: int,
    rejects: Path | None,
    fill_missing_columns: bool,
) -> Iterator[tuple[list[str], list[str]]]:
    """Every CSV row checked before anything is written; the files to train and evaluate on."""
    from tfship.errors import DataError
    from tfship.trainer._input import expand
    from tfship.trainer._rows import _TooManyBadRows, checked_files

    train_set, eval_set = expand(train_files), expand(eval_files)
    echo = functools.partial(click.echo, err=True)
    try:
        with checked_files(
            schema,
            train_set + eval_set,
            max_bad_rows=max_bad_rows,
            rejects=rejects,
            echo=echo,
            fill_missing_columns=fill_missing_columns,
            sets=[("training", train_set), ("evaluation", eval_set)],
        ) as kept:
            yield kept[: len(train_set)], kept[len(train_set) :]
    except _TooManyBadRows as exc:
        raise DataError(f"{exc}; --max-bad-rows N skips up to N of them") from None


def _run_local_cluster(ctx: click.Context, spec: str, model_dir: Path, as_json: bool) -> None:
    from tfship.trainer._launch import LocalCluster, run_local_cluster

    if read_tf_config() is not None:
        raise click.UsageError("--local-cluster starts its own tasks: unset TF_CONFIG")
    try:
        cluster = LocalCluster.parse(spec)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--local-cluster") from None
    args = _without(ctx.meta["tfship.train.args"], "--local-cluster", "--json")
    run = run_local_cluster(cluster, args)
    result = run.summary(model_dir)
    if as_json:
        extra = {"startup_seconds": run.startup_seconds, "exit_codes": run.exit_codes}
        echo_json({**result.to_dict(), **extra})
        return
    echo_summary(result)


def _without(args: list[str], option: str, flag: str) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == option:
            skip = True
        elif not arg.startswith(option + "=") and arg != flag:
            out.append(arg)
    return out


def echo_summary(result: TrainResult) -> None:
    """Print a training summary: metrics, checkpoint and exports, one per line.

    A worker or ps task of a cluster prints one line: the step it saw last.
    """
    if result.task and result.task.split()[0] in ("worker", "ps"):
        click.echo(f"{result.task} ended at step {result.global_step} after {result.seconds:.1f}s")
        return
    metrics = "  ".join(f"{k} {v:.4f}" for k, v in sorted(result.metrics.items()))
    who = f"{result.task}: " if result.task and result.task != "cluster" else ""
    steps = f"{result.global_step} steps"
    if result.start_step:  # a resumed model: the steps of this run, and from where
        steps = f"{result.steps_trained} steps ({result.start_step} -> {result.global_step})"
    click.echo(f"{who}trained {steps} in {result.seconds:.1f}s: {metrics}".rstrip(": "))
    click.echo(f"checkpoint  {result.checkpoint}")
    for name, versions in result.exports.items():
        for version in versions:
            click.echo(f"export      {name:<7} {version}")
    for note in result.notes:
        click.echo(f"note        {note}")
