"""``tfship demo``: the whole life of a model on the bundled penguins, through the real commands.

Every step prints the command a user would type and runs exactly that command: through the same
click group in this process, and ``tfship serve`` in a process of its own, as a user starts it.
What the demo shows is what those commands print; the few lines that are not a command's own
output (the step titles, one summary of the predictions) are marked with ``#``.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import click

from tfship._wire import version_dirs
from tfship.cli._options import valued
from tfship.errors import TfshipError

Echo = Callable[[str], None]

# One penguin of each species: the eval set lists them species by species.
_CALLED_ROWS = (5, 35, 60)


def _shown(path: Path) -> str:
    """A path as a user would type it: relative to the working directory when under it."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except ValueError:  # another drive
        return str(path)


def run_command(args: Sequence[str], echo: Echo = click.echo) -> None:
    """Print ``$ tfship ARGS`` and run it in this process, as the ``tfship`` command would."""
    from tfship.cli import cli

    echo(f"$ tfship {shlex.join(args)}")
    code = cli.main(list(args), prog_name="tfship", standalone_mode=False)
    if code:
        raise TfshipError(f"the demo's command failed (exit {code}): tfship {shlex.join(args)}")


@contextmanager
def _step(title: str, echo: Echo) -> Iterator[None]:
    echo("")
    echo(click.style(f"# == {title}", bold=True))
    started = time.monotonic()
    yield
    echo(click.style(f"#    ({time.monotonic() - started:.1f}s)", dim=True))


def _newest(base: Path) -> Path:
    versions = version_dirs(base)
    if not versions:
        raise TfshipError(f"no export version under {_shown(base)}")
    return versions[-1][1]


def _eval_rows(eval_csv: Path) -> list[dict[str, str]]:
    with eval_csv.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _write_records(path: Path, rows: list[dict[str, str]], schema_path: Path) -> None:
    """CSV rows as the JSON records a client sends: typed by the schema, label and gaps left out."""
    from tfship.schema import Schema

    schema = Schema.load(schema_path)
    kinds = {"float32": float, "int64": int, "string": str}
    with path.open("w") as fh:
        for row in rows:
            record = {f.name: kinds[f.dtype](row[f.name]) for f in schema.features if row.get(f.name)}
            fh.write(json.dumps(record) + "\n")


def _accuracy_line(predictions: Path) -> str:
    with predictions.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    right = sum(row["species"] == row["classes"] for row in rows)
    return f"#    predicted class = species on {right} of {len(rows)} rows"


@contextmanager
def _serving(base: Path, echo: Echo) -> Iterator[str]:
    """Run ``tfship serve`` in its own process; yield its gRPC address; stop it with SIGTERM."""
    args = [
        "serve",
        "--model-base-path",
        _shown(base),
        "--model-name",
        "penguins",
        "--port",
        "0",
        "--rest-port",
        "0",
        "--json",
    ]
    echo(f"$ tfship {shlex.join(args)} &")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    process = subprocess.Popen(
        [sys.executable, "-m", "tfship", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        line = _first_line(process, timeout=120.0)
        info = json.loads(line)
        echo(line.rstrip("\n"))
        yield str(info["grpc"])
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        echo(f"$ kill %1   # tfship serve stops on SIGTERM (exit {process.returncode})")


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The server's first line of output (its ports), or DemoError when it never comes."""
    assert process.stdout is not None
    box: list[str] = []
    stream = process.stdout
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not box or not box[0]:
        process.kill()
        raise TfshipError(f"tfship serve did not announce its ports within {timeout:.0f} s")
    return box[0]


def run_demo(workdir: Path, *, max_steps: int = 400, echo: Echo = click.echo) -> Path:
    """Run every step of the demo in ``workdir`` (emptied first); return the best export."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    w = Path(_shown(workdir))
    data, schema, model = w / "data", w / "schema.json", w / "model"
    started = time.monotonic()
    with _step("1. data and schema", echo):
        run_command(["data", "penguins", "--out", str(data)], echo)
        run_command(
            ["schema", "infer", str(data / "train.csv"), "--label", "species", "--out", str(schema)], echo
        )
    with _step("2. train a dnn on the penguins, exporting best, latest and final", echo):
        run_command(
            [
                "train",
                "--schema",
                str(schema),
                "--train",
                str(data / "train.csv"),
                "--eval",
                str(data / "eval.csv"),
                "--model-dir",
                str(model),
                "--model",
                "dnn",
                "--hidden-units",
                "32,16",
                "--dropout",
                "0.1",
                "--max-steps",
                str(max_steps),
                "--checkpoint-every",
                str(max(1, max_steps // 4)),
                "--log-every",
                "100",
                "--export",
                "best,latest,final",
            ],
            echo,
        )
    best = _newest(model / "export" / "best")
    with _step("3. the export versions and why each exists", echo):
        for kind in ("best", "latest", "final"):
            run_command(["inspect", "versions", str(model / "export" / kind)], echo)
    with _step("4. inspect the best export", echo):
        run_command(
            ["inspect", "show", str(best), "--tag-set", "serve", "--signature", "serving_default"], echo
        )
        run_command(["inspect", "check", str(best)], echo)
    with _step("5. batch-predict the eval set without a server", echo):
        predictions = w / "predictions.csv"
        run_command(
            [
                "predict",
                str(best),
                "-i",
                str(data / "eval.csv"),
                "-o",
                str(predictions),
                "-s",
                "predict",
                "--outputs",
                "classes,probabilities",
                "--keep-columns",
                "species",
                "--rejects",
                str(w / "predictions.rejects.jsonl"),
            ],
            echo,
        )
        echo(_accuracy_line(predictions))
    with _step("6. serve the best export with TF Serving's API and call it", echo):
        rows = _eval_rows(data / "eval.csv")
        records = w / "records.jsonl"
        _write_records(records, [rows[i] for i in _CALLED_ROWS], schema)
        echo(
            f"#    {_shown(records)}: penguins {', '.join(rows[i]['species'] for i in _CALLED_ROWS)} "
            "of the eval set as JSON, without their species"
        )
        with _serving(best.parent, echo) as address:
            run_command(["client", "wait", "--server", address, "--model", "penguins"], echo)
            run_command(["client", "status", "--server", address, "--model", "penguins"], echo)
            run_command(
                ["client", "classify", "--server", address, "--model", "penguins", "-i", str(records)], echo
            )
    echo("")
    echo(f"# demo finished in {time.monotonic() - started:.1f}s; everything is under {w}")
    return best


@click.command()
@valued(
    "--workdir",
    default="tfship-demo",
    type=click.Path(file_okay=False, path_type=Path),
    help="Emptied, then filled by the demo.",
)
@valued("--max-steps", default=400, type=click.IntRange(min=1))
def demo(workdir: Path, max_steps: int) -> None:
    """Run the whole life of a model on the bundled penguins, command by command."""
    logging.getLogger("tfship").setLevel(logging.WARNING)
    run_demo(workdir, max_steps=max_steps)


__all__ = ["demo", "run_command", "run_demo"]
