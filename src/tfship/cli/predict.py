"""``tfship predict``: the batch job over record files, a thin click command over the loaders package."""

from __future__ import annotations

import time
from pathlib import Path

import click

from tfship._output import echo_json, json_text
from tfship.loaders._job import JobSpec, JobSummary, TooManyRejectsError, leave_when_done, process_seconds
from tfship.loaders._publish import is_stdout
from tfship.records import Reject
from tfship.schema import MissingColumnError


def _split_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    return items or None


def _print_summary(summary: JobSummary, as_json: bool, err: bool) -> None:
    """The summary on stdout, or on stderr when stdout carries the predictions (``-o -``)."""
    if as_json and not err:
        echo_json(summary.to_dict())
    else:
        click.echo(json_text(summary.to_dict()) if as_json else summary.line(), err=err)


@click.command()
@click.argument("model", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("files", nargs=-1)
@click.option(
    "--input",
    "-i",
    "inputs",
    multiple=True,
    help="Input file or glob: CSV, JSONL, Parquet, TFRecord of tf.Example (.gz too); repeatable."
    " Files may also follow MODEL (as a shell expands a glob).",
)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="Output file; '-' writes JSONL (or --format csv) to stdout, the summary to stderr.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv", "parquet", "tfrecord"]),
    default=None,
    help="Output format (default: from the output's suffix). tfrecord = TF Serving PredictionLog.",
)
@click.option("--signature", "-s", default=None, help="Signature key (default: serving_default).")
@click.option(
    "--outputs",
    default=None,
    help="Comma-separated signature outputs to write (default: a classifier's class and "
    "probability, a regression's prediction, else all outputs).",
)
@click.option("--batch-size", default=1024, show_default=True, type=click.IntRange(min=1))
@click.option("--keep-columns", default=None, help="Comma-separated input columns copied to the output.")
@click.option(
    "--rejects",
    type=click.Path(path_type=Path),
    default=None,
    help="JSONL file for rejected rows (file, line, reason, record).",
)
@click.option(
    "--max-rejects",
    type=click.IntRange(min=0),
    default=None,
    help="Exit non-zero when more rows than this were rejected (default: no limit).",
)
@click.option(
    "--runner",
    type=click.Choice(["local", "beam", "spark"]),
    default="local",
    show_default=True,
    help="Run in this process, as an Apache Beam pipeline, or on Apache Spark.",
)
@click.option(
    "--master",
    default=None,
    help="Spark master URL for --runner spark (default: local[*]; e.g. spark://host:7077).",
)
@click.option(
    "--beam-option",
    "beam_options",
    multiple=True,
    help="Beam pipeline option KEY=VALUE (e.g. runner=DirectRunner); repeatable.",
)
@click.option(
    "--na-values",
    default=None,
    help="Comma-separated CSV cells that mean missing in numeric columns "
    "(default: NA,N/A,NaN,nan,null,NULL,None; '' for none). An empty cell is always missing.",
)
@click.option(
    "--na-strings",
    is_flag=True,
    help="Also treat --na-values as missing in string columns (default: text is a value).",
)
@click.option(
    "--fill-missing-columns",
    is_flag=True,
    help="Read a file that lacks a feature's column: every row takes the feature's default "
    "(named on stderr). Default: such a file is refused.",
)
@click.option(
    "--ignore-unknown/--no-ignore-unknown",
    default=True,
    show_default=True,
    help="Leave out input columns the signature does not take (a label, ids), naming them on "
    "stderr; --no-ignore-unknown refuses such a file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def predict(
    model: Path,
    files: tuple[str, ...],
    inputs: tuple[str, ...],
    output: Path,
    fmt: str | None,
    signature: str | None,
    outputs: str | None,
    batch_size: int,
    keep_columns: str | None,
    rejects: Path | None,
    max_rejects: int | None,
    runner: str,
    master: str | None,
    beam_options: tuple[str, ...],
    na_values: str | None,
    na_strings: bool,
    fill_missing_columns: bool,
    ignore_unknown: bool,
    as_json: bool,
) -> None:
    """Batch-predict FILES of records with MODEL (a SavedModel or an export base directory).

    Rows keep their input order; a bad row goes to --rejects with its file, line and reason,
    and the run goes on. The summary shows rows in = predicted + rejected. Only a null is
    missing in JSONL, Parquet and TFRecord; in CSV an empty cell, and --na-values in numeric
    columns.

    \b
    Example:
      tfship predict export/dnn data/*.csv -o preds.csv --keep-columns id
    """
    if not inputs and not files:
        raise click.UsageError("no input: give files after MODEL or with --input/-i")
    spec = JobSpec(
        inputs=[*inputs, *files],
        output=output,
        fmt=fmt,
        signature=signature,
        outputs=_split_list(outputs),
        batch_size=batch_size,
        keep_columns=_split_list(keep_columns) or [],
        rejects=rejects,
        max_rejects=max_rejects,
        na_values=None if na_values is None else [v.strip() for v in na_values.split(",") if v.strip()],
        na_strings=na_strings,
        fill_missing_columns=fill_missing_columns,
        ignore_unknown=ignore_unknown,
    )
    if master is not None and runner != "spark":
        raise click.UsageError("--master is for --runner spark")

    def job() -> JobSummary:
        if runner == "spark":
            from tfship.loaders._spark import DEFAULT_MASTER, run_spark_job

            return run_spark_job(model, spec, master or DEFAULT_MASTER, echo_reject=_echo_reject)
        if runner == "beam":
            from tfship.loaders._beam import run_beam_job

            return run_beam_job(model, spec, beam_options)
        from tfship.loaders._job import import_for_job, run_job
        from tfship.loaders._model import load, start_loading

        if not import_for_job(spec):
            with load(model, signature=signature) as loaded:
                return run_job(loaded, spec, echo_reject=_echo_reject)
        # The model is loaded in a thread (TensorFlow imported first, here) while this one
        # opens the files and reads the first chunks; the first run waits for the model.
        with start_loading(model, signature=signature) as loaded:
            try:
                return run_job(loaded, spec, echo_reject=_echo_reject)
            except Exception:
                loaded._loaded()  # a model that fails to load is the error, as if it loaded first
                raise

    to_stdout = is_stdout(output)
    # the total: from the process's start (starting Python, importing TensorFlow, loading the model)
    started = time.perf_counter() - (process_seconds() or 0.0)
    try:
        summary = job()
    except MissingColumnError as exc:
        raise exc.with_option("--fill-missing-columns") from None
    except TooManyRejectsError as exc:
        exc.summary.total_seconds = time.perf_counter() - started
        _print_summary(exc.summary, as_json, to_stdout)
        raise
    summary.total_seconds = time.perf_counter() - started
    _print_summary(summary, as_json, to_stdout)
    if runner == "local":
        leave_when_done()


def _echo_reject(reject: Reject) -> None:
    click.echo(f"rejected {reject.source}:{reject.line}: {reject.reason}", err=True)
