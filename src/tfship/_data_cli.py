"""``tfship data``: the bundled penguins and synthetic data for a schema."""

from __future__ import annotations

from pathlib import Path

import click

from tfship.data import penguins_split, synthesize
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
@click.option("--seed", default=0, show_default=True, type=int)
def synth(schema_path: Path, rows: int, out: Path, seed: int) -> None:
    """Write ROWS synthetic CSV rows that follow a schema."""
    synthesize(Schema.load(schema_path), rows, out, seed=seed)
    click.echo(str(out))
