"""``tfship demo``: the whole life of a model on the bundled penguins, in one run."""

from __future__ import annotations

import csv
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

Echo = Callable[[str], None]


@dataclass
class DemoState:
    """What earlier steps produced, for the later ones."""

    workdir: Path
    train_csv: Path | None = None
    eval_csv: Path | None = None
    schema_path: Path | None = None
    model_dir: Path | None = None
    result: Any = None

    def export(self, kind: str) -> Path:
        """The newest version directory of one exporter."""
        return Path(self.result.exports[kind][-1])


@contextmanager
def _step(title: str, echo: Echo) -> Iterator[None]:
    echo("")
    echo(click.style(f"== {title}", bold=True))
    started = time.monotonic()
    yield
    echo(click.style(f"   ({time.monotonic() - started:.1f}s)", dim=True))


def step_data(state: DemoState, echo: Echo) -> None:
    """Split the penguins into train and eval, and propose a schema for them."""
    from tfship.data import infer_schema, penguins_split

    state.train_csv, state.eval_csv = penguins_split(state.workdir / "data")
    schema = infer_schema(state.train_csv, "species")
    state.schema_path = state.workdir / "schema.json"
    schema.save(state.schema_path)
    echo(f"train {state.train_csv} (276 penguins), eval {state.eval_csv} (68 penguins)")
    echo(f"$ tfship schema infer {state.train_csv.name} --label species --out schema.json")
    for f in schema.features:
        default = f", default {f.default!r}" if f.default is not None else ""
        echo(f"   {f.name:<18} {f.dtype:<8} {f.use['kind']}{default}")
    echo(f"   label {schema.label.name}: {schema.label.kind} {list(schema.label.vocabulary or [])}")


def step_train(state: DemoState, echo: Echo, max_steps: int) -> None:
    """Train the dnn with best, latest and final exports."""
    from tfship.schema import Schema
    from tfship.trainer import ModelConfig, RunOptions, train
    from tfship.trainer._cli import echo_summary

    assert state.schema_path and state.train_csv and state.eval_csv
    state.model_dir = state.workdir / "model"
    echo(f"$ tfship train --schema schema.json --model dnn --max-steps {max_steps} "
         f"--export best,latest,final --model-dir {state.model_dir}")
    state.result = train(
        Schema.load(state.schema_path),
        state.model_dir,
        [str(state.train_csv)],
        [str(state.eval_csv)],
        model=ModelConfig("dnn", hidden_units=(32, 16), dropout=0.1),
        run=RunOptions(max_steps=max_steps, checkpoint_every=max(1, max_steps // 4), log_every=100),
    )
    echo_summary(state.result)


def step_exports(state: DemoState, echo: Echo) -> None:
    """List every export version with the metadata its exporter recorded."""
    from tfship.exporters._demo import describe_exports

    assert state.model_dir is not None
    describe_exports(state.model_dir / "export", echo)


def step_inspect(state: DemoState, echo: Echo) -> None:
    """Show the best export as saved_model_cli would, and whether it is ready to serve."""
    from tfship.inspect._demo import run_demo_step

    run_demo_step(state.export("best"), echo)


def step_predict(state: DemoState, echo: Echo) -> None:
    """Batch-predict the eval set with the best export, as ``tfship predict`` does."""
    from tfship.loaders._demo import run_demo_step

    assert state.eval_csv is not None
    run_demo_step(state.export("best"), state.eval_csv, state.workdir, echo)


def _eval_records(state: DemoState) -> list[dict[str, Any]]:
    assert state.eval_csv is not None
    with state.eval_csv.open(newline="") as fh:
        return list(csv.DictReader(fh))


def step_serve_and_call(state: DemoState, echo: Echo) -> None:
    """Serve the best export with TF Serving's API, call it with ServingClient, stop it."""
    from tfship.schema import Schema
    from tfship.serve_client._client_demo import run_demo_step as call_step
    from tfship.server._demo import run_demo_step as serve_step

    records = _eval_records(state)
    echo(f"$ tfship serve --model-base-path {state.export('best').parent} --model-name penguins "
         "--port 0 --rest-port 0")
    with serve_step(state.export("best").parent, "penguins", echo, records[:1]) as server:
        echo("")
        schema = Schema.load(state.schema_path) if state.schema_path else None
        # One penguin of each species (the eval set lists them species by species).
        call_step(server.address, "penguins", [records[5], records[35], records[60]], echo, schema=schema)
    echo("server stopped")


def run_demo(workdir: Path, *, max_steps: int = 400, echo: Echo = click.echo) -> DemoState:
    """Run every step of the demo in ``workdir`` (emptied first) and return what it made."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    state = DemoState(workdir=workdir)
    started = time.monotonic()
    with _step("1. data and schema", echo):
        step_data(state, echo)
    with _step("2. train a dnn on the penguins, exporting best, latest and final", echo):
        step_train(state, echo, max_steps)
    with _step("3. the export versions and why each exists (assets.extra/tfship.json)", echo):
        step_exports(state, echo)
    with _step("4. inspect the best export", echo):
        step_inspect(state, echo)
    with _step("5. batch-predict the eval set without a server", echo):
        step_predict(state, echo)
    with _step("6. serve the best export with TF Serving's API and call it with ServingClient", echo):
        step_serve_and_call(state, echo)
    echo("")
    echo(f"demo finished in {time.monotonic() - started:.1f}s; everything is under {workdir}")
    return state


@click.command()
@click.option("--workdir", default="tfship-demo", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Emptied, then filled by the demo.")
@click.option("--max-steps", default=400, show_default=True, type=click.IntRange(min=1))
def demo(workdir: Path, max_steps: int) -> None:
    """Run the whole life of a model on the bundled penguins."""
    logging.getLogger("tfship").setLevel(logging.WARNING)
    # The exporters' one-line decisions are part of the story the demo tells; their signature
    # report repeats for every export, and step 3 lists the signatures once per version.
    exporters = logging.getLogger("tfship.exporters")
    exporters.setLevel(logging.INFO)
    exporters.addFilter(lambda record: not record.getMessage().startswith("signatures: "))
    run_demo(workdir, max_steps=max_steps)
