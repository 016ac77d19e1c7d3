"""`inspect show PATH --signature K` needs no `--tag-set` when the SavedModel has one tag-set;
saved_model_cli's own `--signature_def` keeps its behaviour (and its bytes)."""

from __future__ import annotations

import json
import pathlib

import pytest
from click.testing import CliRunner, Result

from tfship.cli import cli

pytestmark = pytest.mark.slow


def _show(*args: str) -> Result:
    return CliRunner().invoke(cli, ["inspect", "show", *args])


@pytest.mark.parametrize("spelling", ["--signature", "--signature-def"])
def test_the_only_tag_set_is_used(exports: dict[str, pathlib.Path], spelling: str) -> None:
    path = str(exports["linear_parsing"])
    picked = _show(path, spelling, "predict")
    explicit = _show(path, "--tag-set", "serve", "--signature", "predict")
    assert picked.exit_code == 0, picked.output
    assert picked.stdout == explicit.stdout
    assert picked.stdout.startswith("The given SavedModel SignatureDef contains")
    assert picked.stderr == "using tag-set 'serve', the only one\n"
    listed = _show(path, spelling, "predict", "--list-ops")
    assert listed.stdout == _show(path, "--tag-set", "serve", "--signature", "predict", "--list-ops").stdout


def test_json_is_filtered_to_the_signature(exports: dict[str, pathlib.Path]) -> None:
    result = _show(str(exports["linear_parsing"]), "--signature", "predict", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [list(mg["signatures"]) for mg in doc["meta_graphs"]] == [["predict"]]


def test_several_tag_sets_need_one_named(exports: dict[str, pathlib.Path]) -> None:
    path = exports["multi_tag"]
    result = _show(str(path), "--signature", "serving_default")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == f"Error: --signature needs --tag-set: {path} has 3 tag-sets: 'train'; 'eval'; 'serve'"


def test_saved_model_cli_spelling_still_lists_the_tag_sets(exports: dict[str, pathlib.Path]) -> None:
    result = _show(str(exports["linear_parsing"]), "--signature_def", "predict")
    assert result.exit_code == 0
    assert result.stdout == "The given SavedModel contains the following tag-sets:\n'serve'\n"
    assert "--signature_def needs --tag_set" in result.stderr


def test_the_two_spellings_must_agree(exports: dict[str, pathlib.Path]) -> None:
    result = _show(str(exports["linear_parsing"]), "--signature", "predict", "--signature_def", "x")
    assert result.exit_code == 2
    assert "disagree" in result.output
