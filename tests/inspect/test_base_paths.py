"""`inspect show`, `diff`, `scan` and `request` take a base path as `check` does: the version TF
Serving would serve from it, named on stderr."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow


def _base(tiny_model: Any, tmp_path: Path, name: str = "penguins") -> Path:
    base = tmp_path / name
    shutil.copytree(tiny_model.export("best"), base / "7")
    shutil.copytree(tiny_model.export("best"), base / "12")
    return base


def test_show_of_a_base_path_is_show_of_the_served_version(tiny_model: Any, tmp_path: Path) -> None:
    base = _base(tiny_model, tmp_path)
    for options in ([], ["--tag-set", "serve"], ["--all"]):
        of_base = CliRunner().invoke(cli, ["inspect", "show", str(base), *options])
        of_version = CliRunner().invoke(cli, ["inspect", "show", str(base / "12"), *options])
        assert of_base.exit_code == 0, of_base.output
        assert of_base.stdout == of_version.stdout
        assert of_base.stderr == f"showing version 12 of {base}: the one TF Serving would serve\n"
        assert of_version.stderr == ""
    as_json = CliRunner().invoke(cli, ["inspect", "show", str(base), "--json"])
    assert json.loads(as_json.stdout)["path"] == str(base / "12")


def test_diff_of_two_base_paths_compares_their_served_versions(tiny_model: Any, tmp_path: Path) -> None:
    old = _base(tiny_model, tmp_path, "old")
    new = _base(tiny_model, tmp_path, "new")
    result = CliRunner().invoke(cli, ["inspect", "diff", str(old), str(new)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"--- {old / '12'}\n+++ {new / '12'}\n")
    assert result.stderr.splitlines() == [
        f"comparing version 12 of {old}: the one TF Serving would serve",
        f"comparing version 12 of {new}: the one TF Serving would serve",
    ]


def test_scan_and_request_take_a_base_path(tiny_model: Any, tmp_path: Path) -> None:
    base = _base(tiny_model, tmp_path)
    scan = CliRunner().invoke(cli, ["inspect", "scan", str(base)])
    assert scan.exit_code == 0, scan.output
    assert scan.stderr == f"scanning version 12 of {base}: the one TF Serving would serve\n"
    request = CliRunner().invoke(
        cli,
        [
            "inspect",
            "request",
            str(base),
        ],
    )
    assert request.exit_code == 0, request.output
    assert f"using version 12 of {base}: the one TF Serving would serve" in request.stderr


def test_a_base_path_whose_newest_version_is_empty_is_refused_naming_it(
    tiny_model: Any, tmp_path: Path
) -> None:
    base = _base(tiny_model, tmp_path)
    (base / "13").mkdir()
    result = CliRunner().invoke(cli, ["inspect", "show", str(base)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: no SavedModel in {str(base / '13')!r}: expected saved_model.pb or saved_model.pbtxt"
    )
