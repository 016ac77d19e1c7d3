"""``tfship schema``: propose a schema for a CSV file, or check one."""

from __future__ import annotations

from pathlib import Path

import click

from tfship._output import echo_json
from tfship.cli._options import file_option, flag
from tfship.data import explain_schema
from tfship.schema import NA_VALUES, CsvMissing, Schema, read_csv_header


@click.group()
def schema() -> None:
    """Propose or check a feature schema."""


@schema.command()
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--label", required=True, help="The column the model predicts.")
@click.option("--exclude", multiple=True, help="A column to leave out (repeatable).")
@click.option(
    "--keep", multiple=True, help="A column to use even though it looks like an identifier (repeatable)."
)
@file_option("--out", "-o", help="Write it here.")
@click.option(
    "--na-values",
    default=None,
    help="Comma-separated cells that mean missing in numeric columns "
    "(default: NA,N/A,NaN,nan,null,NULL,None). An empty cell is always missing.",
)
@flag("--na-strings", help="Also treat --na-values as missing in string columns.")
def infer(
    data: Path,
    label: str,
    exclude: tuple[str, ...],
    keep: tuple[str, ...],
    out: Path | None,
    na_values: str | None,
    na_strings: bool,
) -> None:
    """Propose a schema for DATA.csv: dtypes, vocabularies, hash buckets, defaults.

    What was seen in each column and what was chosen goes to stderr, one line per column.
    Identifiers (a distinct text per row, a row number), columns of one value and dates of
    more than 50 days are left out unless --keep names them.
    """
    tokens = NA_VALUES if na_values is None else tuple(v.strip() for v in na_values.split(",") if v.strip())
    rule = CsvMissing(tokens, strings=na_strings)
    proposed, reasons = explain_schema(data, label, exclude=exclude, keep=keep, csv_missing=rule)
    for line in reasons:
        click.echo(line, err=True)
    left_out = [n for n in _columns(data) if n not in {label, *exclude, *proposed.feature_names}]
    if left_out:
        click.echo(
            f"left out: {', '.join(left_out)} (each for the reason above); --keep NAME uses one "
            f"anyway (or add it to the schema)",
            err=True,
        )
    if out is not None:
        proposed.save(out)
        click.echo(
            f"wrote {out}: {len(proposed.features)} features, label {label!r} ({proposed.label.kind})",
            err=True,
        )
    else:
        echo_json(proposed.to_dict())


def _columns(data: Path) -> list[str]:
    with data.open("rb") as stream:
        return read_csv_header(stream)


@schema.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@flag("--json", "as_json", help="Print the validated schema as JSON.")
def check(path: Path, as_json: bool) -> None:
    """Validate a schema file; a bad one exits 2 naming the feature."""
    loaded = Schema.load(path)
    if as_json:
        echo_json(loaded.to_dict())
        return
    click.echo(f"{path}: ok, label {loaded.label.name!r} ({loaded.label.kind})")
    for f in loaded.features:
        shape = "var" if f.shape is None else list(f.shape)
        extra = f", default {f.default!r}" if f.default is not None else ""
        click.echo(f"  {f.name:<24} {f.dtype:<8} {shape!s:<6} {f.use['kind']}{extra}")
