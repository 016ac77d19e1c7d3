"""``tfship data``: the bundled penguins and synthetic data for a schema."""

from __future__ import annotations

from pathlib import Path

import click

from tfship.cli._options import valued
from tfship.data import penguins_split, synthesis_notes, synthesize
from tfship.schema import Schema


@click.group()
def data() -> None:
    """Bundled and synthetic data sets."""


@data.command()
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path))
def penguins(out: Path) -> None:
    """Write the Palmer penguins as train.csv and eval.csv (a fixed split)."""
    train, evaluation = penguins_split(out)
    click.echo(f"{train}\n{evaluation}")


@data.command()
@click.option("--schema", "schema_path", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--rows", required=True, type=click.IntRange(min=0))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path))
@valued("--seed", default=0, type=int)
def synth(schema_path: Path, rows: int, out: Path, seed: int) -> None:
    """Write ROWS synthetic CSV rows that follow a schema.

    Numbers keep to the schema's units and recorded range (whole in an integer column); what
    the schema leaves open is named on stderr.
    """
    loaded = Schema.load(schema_path)
    for note in synthesis_notes(loaded):
        click.echo(f"{note} ({schema_path})", err=True)
    synthesize(loaded, rows, out, seed=seed)
    click.echo(str(out))
