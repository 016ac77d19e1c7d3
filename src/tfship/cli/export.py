"""``tfship export``: export a checkpoint of a trained model directory as a new version.

The one verb that composes two packages: the trainer rebuilds the model from ``trainer.json``,
the exporters stage, verify and publish it. It lives above both so that neither imports the other's
direction back (the trainer uses the exporters during training).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tfship._interrupt import finishing_once_live, late_interrupt
from tfship._output import echo_json
from tfship.cli._options import directory_option, file_option, flag, valued
from tfship.errors import InputError

if TYPE_CHECKING:
    from tfship.exporters import ExportResult
    from tfship.schema import Schema

logger = logging.getLogger("tfship.exporters")

RECEIVERS = ("parsing", "raw", "both")
#: the receiver of a model dir whose trainer.json records none
DEFAULT_RECEIVER = "parsing"


def _best_by(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    metric, _, mode = value.partition(":")
    mode = mode or "auto"
    if not metric or mode not in ("min", "max", "auto"):
        raise click.BadParameter(f"expected METRIC:MODE with MODE min, max or auto; got {value!r}")
    return metric, mode


@click.command()
@click.option("--model-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@file_option(
    "--schema",
    "schema_path",
    help="Schema JSON. Default: the one training recorded in the model dir.",
)
@click.option(
    "--receiver",
    "kind",
    type=click.Choice(RECEIVERS),
    default=None,
    help="Serialized tf.Examples, raw tensors, or both (parsing default, raw alternative). "
    "Default: the one training recorded in the model dir, else parsing.",
)
@directory_option(
    "--out",
    "-o",
    "out",
    required=True,
    help="Base directory of the versions (TF Serving's base path).",
)
@click.option("--checkpoint", default=None, help="Checkpoint to export. Default: the newest.")
@click.option(
    "--best-by",
    default=None,
    callback=_best_by,
    metavar="METRIC:MODE",
    help="Export the best evaluated checkpoint, e.g. auc:max or loss:min.",
)
@click.option("--eval-name", default=None, help="Evaluation to rank by (eval_<name>); with --best-by.")
@file_option(
    "--warmup",
    "warmup_path",
    default=None,
    help="JSONL, CSV or TFRecord of examples to write as warmup requests.",
)
@click.option(
    "--version",
    "version",
    default=None,
    type=click.IntRange(min=0),
    help="Explicit version number. Default: max(now, newest + 1).",
)
@valued("--version-by", type=click.Choice(["time", "step"]), default="time")
@flag("--no-verify", help="Publish without loading the export back first.")
@flag("--json", "as_json", help="Print the result as JSON.")
def export(
    model_dir: Path,
    schema_path: Path | None,
    kind: str | None,
    out: Path,
    checkpoint: str | None,
    best_by: tuple[str, str] | None,
    eval_name: str | None,
    warmup_path: Path | None,
    version: int | None,
    version_by: str,
    no_verify: bool,
    as_json: bool,
) -> None:
    """Export a checkpoint of MODEL_DIR as a new, verified SavedModel version under OUT."""
    if checkpoint and best_by:
        raise click.UsageError("--checkpoint and --best-by are exclusive: choose one")
    if not model_dir.is_dir():
        raise InputError(f"--model-dir {model_dir}: no such model directory")
    from tfship.trainer import TRAINER_FILE, read_trainer_file

    recorded = read_trainer_file(model_dir)
    if recorded is None:
        raise InputError(
            f"--model-dir {model_dir} has no {TRAINER_FILE}: tfship export rebuilds only models "
            "trained by tfship train; for an Estimator with your own model_fn, export from Python "
            "with tfship.exporters.export_model(estimator, out, receiver) or the exporters"
        )
    from tfship.exporters import best_checkpoint, export_model
    from tfship.exporters._shared import build_receiver
    from tfship.schema import Schema
    from tfship.trainer import build_estimator

    schema = Schema.load(schema_path) if schema_path else None
    estimator = build_estimator(schema, model_dir)
    if schema is None:
        schema = Schema.from_dict(recorded["schema"])
    kind = kind or _recorded_receiver(recorded, model_dir)
    eval_result: dict[str, Any] | None = None
    if best_by:
        checkpoint, record = best_checkpoint(model_dir, best_by[0], best_by[1], eval_name)
        eval_result = {**record.metrics, "global_step": record.step}
        logger.info("best %s: step %d (%s)", best_by[0], record.step, record.eval_dir)
    else:
        eval_result = _evaluation_of(estimator, model_dir, checkpoint, eval_name)
    warmup = read_warmup_records(warmup_path, schema) if warmup_path else None
    # Once the version is published it is live: a Ctrl-C after that cannot undo it, so the
    # command finishes, prints what it published and exits 0.
    with finishing_once_live():
        result = export_model(
            estimator,
            out,
            build_receiver(schema, kind),
            checkpoint_path=checkpoint,
            version=version,
            version_by=version_by,
            warmup=warmup,
            verify=not no_verify,
            exporter={"name": "cli", "kind": "cli", **({"best_by": list(best_by)} if best_by else {})},
            eval_result=eval_result,
        )
        logger.info("exported %d: step %s from %s", result.version, result.global_step, result.checkpoint)
        if as_json:
            echo_json(result.to_dict())
        else:
            _echo_result(result)
        if late_interrupt():
            logger.info("Ctrl-C came after version %d was published: it stays published", result.version)


def _recorded_receiver(recorded: dict[str, Any], model_dir: Path) -> str:
    # The exports training wrote have the recorded receiver's signatures; an export without
    # them would be refused by promote as a removed signature.
    receiver = recorded.get("receiver")
    if receiver in RECEIVERS:
        logger.info("receiver %s, as training recorded in %s", receiver, model_dir / "trainer.json")
        return str(receiver)
    logger.info(
        "receiver %s: %s records none (trained before it was recorded); give --receiver to choose",
        DEFAULT_RECEIVER,
        model_dir / "trainer.json",
    )
    return DEFAULT_RECEIVER


def _evaluation_of(
    estimator: Any, model_dir: Path, checkpoint: str | None, eval_name: str | None
) -> dict[str, Any] | None:
    # Record the metrics of the exported checkpoint when it was evaluated; none is fine.
    from tfship.exporters import read_eval_history
    from tfship.exporters._shared import checkpoint_step, resolve_checkpoint

    step = checkpoint_step(resolve_checkpoint(estimator, checkpoint))
    try:
        history = read_eval_history(model_dir, eval_name)
    except InputError:
        return None
    for record in history:
        if record.step == step:
            return {**record.metrics, "global_step": step}
    return None


def _echo_result(result: ExportResult) -> None:
    click.echo(f"version     {result.version}")
    click.echo(f"path        {result.path}")
    click.echo(f"checkpoint  {result.checkpoint} (step {result.global_step})")
    verified = "yes" if result.verified else "no"
    warm = f", {result.warmup_records} warmup requests replayed" if result.warmup_records else ""
    click.echo(f"verified    {verified}{warm if result.verified else ''}")
    for key, sig in sorted(result.signatures.written.items()):
        origin = f" (from {sig['from']})" if sig.get("from") else ""
        click.echo(f"signature   {key:<24} {sig['method']:<9} inputs: {', '.join(sig['inputs'])}{origin}")
    for key, reason in sorted(result.signatures.excluded.items()):
        click.echo(f"excluded    {key:<24} {reason}")


def read_warmup_records(path: Path, schema: Schema | None = None) -> list[Any]:
    """Records for warmup requests from a JSONL, JSON, CSV, Parquet or TFRecord (of tf.Example)
    file, read by ``tfship.records.read_records`` as every command reads records (CSV cells
    typed by ``schema`` when given) and each checked against ``schema`` (a bad one is named by
    file and record).

    Raises:
        InputError: the file is missing, empty, or not one of these formats, or a record does
            not fit the schema.
    """
    from tfship._wire import MAX_WARMUP_RECORDS
    from tfship.records import read_records

    if not path.is_file():
        raise InputError(f"warmup file {path} does not exist")
    records = read_records(path, limit=MAX_WARMUP_RECORDS + 1, schema=schema)
    if not records:
        raise InputError(f"warmup file {path} holds no records")
    return records
