"""`inspect check` on a base path checks the version TF Serving would serve from it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow


def test_a_base_path_checks_its_newest_version(tiny_model: Any, tmp_path: Path) -> None:
    base = tmp_path / "penguins"
    shutil.copytree(tiny_model.export("best"), base / "7")
    shutil.copytree(tiny_model.export("best"), base / "12")
    result = CliRunner().invoke(cli, ["inspect", "check", str(base)])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"checking version 12 of {base}: the one TF Serving would serve\n"
    assert f"{base / '12'}: ready" in result.stdout


def test_a_newest_version_without_a_model_is_what_fails(tiny_model: Any, tmp_path: Path) -> None:
    # TF Serving serves the highest version, loadable or not: so that is the one checked.
    base = tmp_path / "penguins"
    shutil.copytree(tiny_model.export("best"), base / "7")
    (base / "12").mkdir()
    result = CliRunner().invoke(cli, ["inspect", "check", str(base)])
    assert result.exit_code != 0
    assert "checking version 12" in result.stderr
    assert "12" in result.stderr.splitlines()[-1]
