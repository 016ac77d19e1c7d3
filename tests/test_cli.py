"""The tfship command: version, help on every verb, one-line errors, schema/data verbs, demo."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from estimator_lane import has_estimator
from read_only import CAUSE, read_only_dir
from tfship import __version__
from tfship.cli import COMMANDS, NEEDS_ESTIMATOR, SHORT_HELP, cli
from tfship.errors import TfshipError


def test_version_and_module_entry_point() -> None:
    assert CliRunner().invoke(cli, ["--version"]).output.strip() == f"tfship, version {__version__}"
    out = subprocess.run([sys.executable, "-m", "tfship", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"tfship, version {__version__}"


def test_every_listed_verb_loads_and_has_help() -> None:
    runner = CliRunner()
    listed = cli.list_commands(click.Context(cli))
    assert listed == list(COMMANDS)
    for name in listed:
        assert name in COMMANDS
        result = runner.invoke(cli, [name, "-h"])
        if name in NEEDS_ESTIMATOR and not has_estimator():  # the run lane: a line naming it
            assert (result.exit_code, result.stdout) == (1, ""), name
            assert result.stderr.startswith(f"Error: tfship {name} needs tf.estimator, which ships"), name
            pip = r'pip install (-e )?"\S*\[estimator\]" in a Python 3\.9-3\.11 environment'
            assert re.search(pip, result.stderr), result.stderr
            continue
        assert result.exit_code == 0, (name, result.output)
        assert "Usage:" in result.output


def test_the_help_listing_says_what_each_verb_says_of_itself() -> None:
    # `tfship --help` lists the verbs from SHORT_HELP, without importing them: each line must
    # stay the first sentence of the verb's own help (the verbs this TensorFlow can load).
    ctx = click.Context(cli)
    for name in COMMANDS:
        if name in NEEDS_ESTIMATOR and not has_estimator():
            continue  # loading it says which extra it needs (above)
        command = cli.get_command(ctx, name)
        assert command is not None and command.help is not None
        first = " ".join(command.help.split("\n\n")[0].split())
        assert SHORT_HELP[name] == first, name
    listing = CliRunner().invoke(cli, ["--help"]).output
    assert all(name in listing for name in COMMANDS)


def test_help_imports_no_verb() -> None:
    probe = (
        "import sys; from click.testing import CliRunner; from tfship.cli import cli; "
        "CliRunner().invoke(cli, ['--help']); "
        "print(sorted(m for m in sys.modules if m.startswith(('tfship.', 'numpy', 'grpc'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(ast.literal_eval(out.stdout))
    assert not {m for m in loaded if m.startswith(("numpy", "grpc"))}
    assert loaded <= {"tfship._interrupt", "tfship._tf", "tfship.cli", "tfship.errors"}, loaded


def test_tfship_error_is_one_line_with_its_exit_code(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["schema", "check", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert result.stderr == f"Error: schema file {tmp_path / 'nope.json'} does not exist\n"
    assert "Traceback" not in result.output


def test_an_io_error_is_one_line_naming_the_path(tmp_path: Path) -> None:
    with read_only_dir(tmp_path / "read-only") as place:
        result = CliRunner().invoke(cli, ["data", "penguins", "--out", str(place / "data")])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {place / 'data'}: {CAUSE}\n"
    assert "Traceback" not in result.output


@pytest.mark.estimator
def test_export_to_a_base_it_cannot_make_is_one_line(tiny_model: Any, tmp_path: Path) -> None:
    with read_only_dir(tmp_path / "read-only") as place:
        result = CliRunner().invoke(
            cli, ["export", "--model-dir", str(tiny_model.model_dir), "-o", str(place / "base")]
        )
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == f"Error: {place / 'base'}: {CAUSE}"
    assert "Traceback" not in result.output


def test_exit_codes_live_on_the_classes() -> None:
    from tfship import errors

    classes = [name for name in errors.__all__ if isinstance(getattr(errors, name), type)]
    codes = {name: getattr(errors, name).exit_code for name in classes}
    assert codes["TfshipError"] == 1 and codes["InputError"] == 2 and codes["VerdictError"] == 3
    assert all(issubclass(getattr(errors, n), TfshipError) for n in classes)
    # how messages show a value, and how the CLI shows an OSError
    assert set(errors.__all__) - set(classes) == {"os_error_text", "value_text"}


def test_schema_infer_and_check(tmp_path: Path) -> None:
    runner = CliRunner()
    data = tmp_path / "d.csv"
    data.write_text("colour,size,label\nred,1.5,yes\nblue,,no\nred,2.5,yes\n")
    result = runner.invoke(cli, ["schema", "infer", str(data), "--label", "label"])
    assert result.exit_code == 0, result.output
    proposed = json.loads(result.stdout)
    assert proposed["label"] == {"name": "label", "kind": "binary", "vocabulary": ["no", "yes"]}
    size = next(f for f in proposed["features"] if f["name"] == "size")
    assert size["dtype"] == "float32" and size["default"] == 2.0
    out = tmp_path / "s.json"
    infer = runner.invoke(cli, ["schema", "infer", str(data), "--label", "label", "--out", str(out)])
    assert infer.exit_code == 0, infer.output
    checked = runner.invoke(cli, ["schema", "check", str(out)])
    assert checked.exit_code == 0 and "size" in checked.stdout and "default 2.0" in checked.stdout
    missing = runner.invoke(cli, ["schema", "infer", str(data), "--label", "price"])
    assert missing.exit_code == 2 and "label column 'price' is not in" in missing.stderr


def test_data_penguins_and_synth(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["data", "penguins", "--out", str(tmp_path)]).exit_code == 0
    schema = tmp_path / "s.json"
    train_csv = str(tmp_path / "train.csv")
    runner.invoke(cli, ["schema", "infer", train_csv, "--label", "species", "--out", str(schema)])
    result = runner.invoke(
        cli, ["data", "synth", "--schema", str(schema), "--rows", "50", "--out", str(tmp_path / "synth.csv")]
    )
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "synth.csv").read_text().splitlines()) == 51


@pytest.mark.slow
def test_verbose_brings_tensorflow_logs_back(tmp_path: Path) -> None:
    # TensorFlow 2.16 and later print absl lines while importing whatever TF_CPP_MIN_LOG_LEVEL
    # says; tfship silences them as it does 2.15's, and --verbose brings both back.
    export = Path(__file__).parent / "fixtures" / "newtf" / "keras_export" / "1"

    def stderr_of(*flags: str) -> str:
        cmd = [sys.executable, "-m", "tfship", *flags, "inspect", "check", str(export), "--run"]
        env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stderr

    quiet, loud = stderr_of(), stderr_of("--verbose")
    assert quiet == ""
    assert "oneDNN custom operations are on" in loud


@pytest.mark.slow
@pytest.mark.estimator  # it trains
def test_demo_runs_the_life_of_a_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--workdir", str(tmp_path / "demo"), "--max-steps", "40"])
    assert result.exit_code == 0, result.output
    assert "demo finished" in result.stdout
    # every step is a real command, printed as typed and followed by its own output
    commands = [line.split()[2] for line in result.stdout.splitlines() if line.startswith("$ tfship ")]
    assert commands == [
        "data",
        "schema",
        "train",
        "inspect",
        "inspect",
        "inspect",
        "inspect",
        "inspect",
        "predict",
        "serve",
        "client",
        "client",
        "client",
    ]
    assert "rows in: 68, predicted: 68, rejected: 0" in result.stdout
    assert "ready (0 errors, 0 warnings)" in result.stdout
    assert "example 2: " in result.stdout
    for kind in ("best", "latest", "final"):
        versions = [p for p in (tmp_path / "demo" / "model" / "export" / kind).iterdir() if p.name.isdigit()]
        assert versions, kind


def _all_subclasses(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    for sub in list(found):
        found |= _all_subclasses(sub)
    return found


@pytest.mark.estimator  # every package imports, the trainer's and the exporters' names included
def test_every_error_class_is_drawn_in_the_tree() -> None:
    import importlib

    from tfship import errors

    # Load every name the packages export (some load on first use), so every module that
    # defines an error class a user can meet is imported.
    for package in ("schema", "data", "trainer", "exporters", "inspect", "loaders", "serve_client", "server"):
        module = importlib.import_module(f"tfship.{package}")
        for name in module.__all__:
            getattr(module, name)
    names = {
        cls.__name__
        for cls in _all_subclasses(TfshipError)
        if cls.__module__.startswith("tfship") and not cls.__name__.startswith("_")  # public ones
    }
    assert len(names) > 30
    assert not {n for n in names if n not in (errors.__doc__ or "")}
