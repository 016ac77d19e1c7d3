"""``tfship bench``: time a model's load, first call and latency per batch size, over the
loaders package."""

from __future__ import annotations

from pathlib import Path

import click

from tfship._output import echo_json
from tfship.cli._options import flag, valued


@click.command()
@click.argument("model", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--signature", "-s", default=None, help="Signature key (default: serving_default).")
@valued(
    "--batch-sizes",
    default="1,64,1024",
    help="Comma-separated batch sizes to time.",
)
@click.option(
    "--input",
    "-i",
    "input_file",
    default=None,
    help="Rows to time with (CSV, JSONL, Parquet, TFRecord); default: synthetic rows.",
)
@valued("--seconds", default=2.0, help="Time spent per batch size.")
@flag("--json", "as_json", help="Print the results as JSON.")
def bench(
    model: Path,
    signature: str | None,
    batch_sizes: str,
    input_file: str | None,
    seconds: float,
    as_json: bool,
) -> None:
    """Time MODEL: load, first call, and p50/p99 latency and rows/s per batch size.

    \b
    Example:
      tfship bench export/dnn --batch-sizes 1,64,1024
    """
    from tfship.loaders._bench import BenchReport, run_bench

    sizes = []
    for item in batch_sizes.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) < 1:
            raise click.BadParameter(f"{item!r} is not a positive integer", param_hint="--batch-sizes")
        sizes.append(int(item))
    report: BenchReport = run_bench(
        model, signature=signature, batch_sizes=sizes, input_file=input_file, seconds=seconds
    )
    echo_json(report.to_dict()) if as_json else click.echo(report.table())
