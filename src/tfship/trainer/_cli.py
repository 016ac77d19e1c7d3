"""``tfship train``: train and evaluate an Estimator from a schema, then export."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from tfship._output import echo_json
from tfship.schema import Schema

if TYPE_CHECKING:
    from tfship.trainer import TrainResult


def _int_list(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, found {value!r}") from None


def _kinds(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


@click.command()
@click.option("--schema", "schema_path", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--train", "train_files", required=True, multiple=True, help="CSV/TFRecord file or glob.")
@click.option("--eval", "eval_files", required=True, multiple=True, help="CSV/TFRecord file or glob.")
@click.option("--model-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--model", "kind", type=click.Choice(["linear", "dnn", "two_tower"]), default="dnn",
              show_default=True)
@click.option("--hidden-units", default="32,16", show_default=True, callback=_int_list)
@click.option("--activation", default="relu", show_default=True)
@click.option("--dropout", default=0.0, show_default=True, type=click.FloatRange(0.0, 1.0, max_open=True))
@click.option("--batch-norm", is_flag=True)
@click.option("--tower-dim", default=16, show_default=True, type=click.IntRange(min=1))
@click.option("--optimizer", default="adam", show_default=True)
@click.option("--learning-rate", default=0.01, show_default=True, type=float)
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1))
@click.option("--epochs", default=None, type=click.IntRange(min=1), help="Default: repeat until max steps.")
@click.option("--shuffle-buffer", default=1000, show_default=True, type=click.IntRange(min=1))
@click.option("--reader-threads", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--parser-threads", default=2, show_default=True, type=click.IntRange(min=1))
@click.option("--prefetch", default=2, show_default=True, type=click.IntRange(min=1))
@click.option("--max-steps", default=1000, show_default=True, type=click.IntRange(min=1))
@click.option("--checkpoint-every", default=100, show_default=True, type=click.IntRange(min=1))
@click.option("--keep-checkpoints", default=5, show_default=True, type=click.IntRange(min=1))
@click.option("--log-every", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--eval-throttle-secs", default=0, show_default=True, type=click.IntRange(min=0))
@click.option("--seed", default=42, show_default=True, type=int)
@click.option("--warm-start-from", default=None, help="Checkpoint or model dir to initialise from.")
@click.option("--export", "exports", default="best,latest,final", show_default=True, callback=_kinds,
              help="Exporters to attach: any of best, latest, final; '' for none.")
@click.option("--receiver", type=click.Choice(["parsing", "raw", "both"]), default="both", show_default=True,
              help="Serving input of the exports: serialized tf.Examples, raw tensors, or both.")
@click.option("--best-metric", default="loss", show_default=True)
@click.option("--best-mode", type=click.Choice(["min", "max", "auto"]), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def train(schema_path: Path, train_files: tuple[str, ...], eval_files: tuple[str, ...], model_dir: Path,
          kind: str, hidden_units: tuple[int, ...], activation: str, dropout: float, batch_norm: bool,
          tower_dim: int, optimizer: str, learning_rate: float, batch_size: int, epochs: int | None,
          shuffle_buffer: int, reader_threads: int, parser_threads: int, prefetch: int, max_steps: int,
          checkpoint_every: int, keep_checkpoints: int, log_every: int, eval_throttle_secs: int,
          seed: int, warm_start_from: str | None, exports: tuple[str, ...], receiver: str, best_metric: str,
          best_mode: str, as_json: bool) -> None:
    """Train an Estimator (Keras model + Head) from a schema, evaluate and export it."""
    from tfship import trainer

    schema = Schema.load(schema_path)
    try:
        model = trainer.ModelConfig(kind=kind, hidden_units=hidden_units, activation=activation,
                                    dropout=dropout, batch_norm=batch_norm, tower_dim=tower_dim,
                                    learning_rate=learning_rate, optimizer=optimizer)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    inputs = trainer.InputConfig(batch_size=batch_size, epochs=epochs, shuffle_buffer=shuffle_buffer,
                                 reader_threads=reader_threads, parser_threads=parser_threads,
                                 prefetch=prefetch, seed=seed)
    run = trainer.RunOptions(max_steps=max_steps, checkpoint_every=checkpoint_every,
                             keep_checkpoints=keep_checkpoints, log_every=log_every, seed=seed,
                             eval_throttle_secs=eval_throttle_secs, exports=exports,
                             receiver=receiver, best_metric=best_metric, best_mode=best_mode,
                             warm_start_from=warm_start_from)
    result = trainer.train(schema, model_dir, train_files, eval_files, model=model, inputs=inputs, run=run)
    if as_json:
        echo_json(result.to_dict())
        return
    echo_summary(result)


def echo_summary(result: TrainResult) -> None:
    """Print a training summary: metrics, checkpoint and exports, one per line."""
    metrics = "  ".join(f"{k} {v:.4f}" for k, v in sorted(result.metrics.items()))
    click.echo(f"trained {result.global_step} steps in {result.seconds:.1f}s: {metrics}")
    click.echo(f"checkpoint  {result.checkpoint}")
    for name, versions in result.exports.items():
        for version in versions:
            click.echo(f"export      {name:<7} {version}")
