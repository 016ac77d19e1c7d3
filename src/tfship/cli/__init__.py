"""The ``tfship`` command: one click group, one thin command per verb.

Each verb has a module of its own (``tfship/cli/<verb>.py``) and is imported only when it is
run or listed, so ``tfship --help`` never imports TensorFlow. ``TfshipError``s are printed as one
line and exit with the code their class carries; so are ``OSError``s (path and cause, exit 1).
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any, NoReturn

import click

from tfship import __version__
from tfship._interrupt import interrupted, recording_interrupts
from tfship._tf import require_extra, set_verbose
from tfship.errors import TfshipError, os_error_text

__all__ = ["COMMANDS", "NEEDS_ESTIMATOR", "SHORT_HELP", "cli", "main"]

_CHATTY_LIBRARIES = ("httpx", "httpcore")
INTERRUPTED = 130  # what a shell reports for a command stopped by SIGINT

# verb -> "module:attribute"; listing order is the order of a model's life.
COMMANDS: dict[str, str] = {
    "schema": "tfship.cli.schema:schema",
    "data": "tfship.cli.data:data",
    "train": "tfship.cli.train:train",
    "cluster": "tfship.cli.cluster:cluster",
    "export": "tfship.cli.export:export",
    "inspect": "tfship.cli.inspect:inspect",
    "predict": "tfship.cli.predict:predict",
    "bench": "tfship.cli.bench:bench",
    "serve": "tfship.cli.serve:serve",
    "client": "tfship.cli.client:client",
    "promote": "tfship.cli.promote:promote",
    "demo": "tfship.cli.demo:demo",
}


# The verbs that run a model: without TensorFlow they fail in one line naming the ``run`` extra
# (the core install has schema, data synth, inspect and client).
NEEDS_RUN = frozenset({"predict", "bench", "serve", "promote"})
# The verbs that train or export an Estimator: they need ``tf.estimator``, so TensorFlow 2.15 and
# the ``estimator`` extra; on a newer TensorFlow they say so in one line.
NEEDS_ESTIMATOR = frozenset({"train", "cluster", "export", "demo"})


# verb -> the first sentence of its help, which ``tfship --help`` lists without importing the
# verb (a test keeps each equal to the command's own).
SHORT_HELP: dict[str, str] = {
    "schema": "Propose or check a feature schema.",
    "data": "Bundled and synthetic data sets.",
    "train": "Train an Estimator (Keras model + Head) from a schema, evaluate and export it.",
    "cluster": "Helpers for running `tfship train` on a cluster of your own.",
    "export": "Export a checkpoint of MODEL_DIR as a new, verified SavedModel version under OUT.",
    "inspect": "Look inside SavedModels from their protos: nothing is loaded or run.",
    "predict": "Batch-predict FILES of records with MODEL (a SavedModel or an export base directory).",
    "bench": "Time MODEL: load, first call, and p50/p99 latency and rows/s per batch size.",
    "serve": "Serve SavedModels over TensorFlow Serving's gRPC (and REST) API until stopped.",
    "client": "Call a TF Serving server: status, metadata, predict, classify, regress, wait.",
    "promote": "Check CANDIDATE against the version served from --to, then publish it there.",
    "demo": "Run the whole life of a model on the bundled penguins, command by command.",
}


class TfshipGroup(click.Group):
    """A click group that loads its verbs lazily and turns ``TfshipError`` into one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The listing of ``tfship --help`` from SHORT_HELP: importing every verb to ask for its
        # help line would load most of tfship (numpy, gRPC, pyarrow) for a help screen.
        with formatter.section("Commands"):
            formatter.write_dl([(name, SHORT_HELP[name]) for name in COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        if cmd_name in NEEDS_RUN or cmd_name in NEEDS_ESTIMATOR:
            require_extra(f"tfship {cmd_name}", estimator=cmd_name in NEEDS_ESTIMATOR)
        module_name, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with recording_interrupts():
                result = super().invoke(ctx)
        except KeyboardInterrupt:
            _aborted(ctx)
        except Exception as exc:
            if interrupted():  # Ctrl-C surfaced as another error inside a library: it still stops
                _aborted(ctx)
            if isinstance(exc, OSError):  # a full disk, a read-only file system: no traceback
                click.echo(f"Error: {os_error_text(exc)}", err=True)
                ctx.exit(1)
            if not isinstance(exc, TfshipError):
                raise
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        if interrupted():  # a library swallowed the KeyboardInterrupt: still stop
            _aborted(ctx)
        return result


def _aborted(ctx: click.Context) -> NoReturn:
    click.echo("Aborted!", err=True)
    ctx.exit(INTERRUPTED)


@click.group(cls=TfshipGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tfship")
@click.option("-v", "--verbose", is_flag=True, help="Show TensorFlow's own logs and tfship's debug logs.")
def cli(verbose: bool) -> None:
    """Export, inspect, run, serve and call TensorFlow SavedModels."""
    set_verbose(verbose)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(message)s",
        stream=sys.stderr,
    )
    if not verbose:
        # libraries that log every request at INFO (httpx): a command's stderr is for its own
        # messages, --verbose shows theirs too
        for name in _CHATTY_LIBRARIES:
            logging.getLogger(name).setLevel(logging.WARNING)


def main() -> None:
    """Entry point of the ``tfship`` console script."""
    with recording_interrupts(until_exit=True):  # from the first moment: a Ctrl-C while importing stops too
        cli(prog_name="tfship")
