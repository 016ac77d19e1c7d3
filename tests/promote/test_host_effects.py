"""An export that writes files on the host is refused before it is loaded, by promote and by
inspect check --run, unless the user allows its ops by name; nothing of it runs before."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tfship.cli import cli

from .conftest import export_writer

REFUSAL = (
    "uses WriteFile, an op with side effects on the host: refused before loading "
    "(allow it with --allow-op WriteFile)"
)


@pytest.fixture()
def writer(tmp_path: Path) -> tuple[Path, Path]:
    written = tmp_path / "written"
    written.mkdir()
    return export_writer(tmp_path / "m" / "1", written), written


def test_promote_refuses_it_before_loading_naming_the_op_and_the_flag(
    writer: tuple[Path, Path], tmp_path: Path
) -> None:
    export, written = writer
    result = CliRunner().invoke(cli, ["promote", str(export), "--to", str(tmp_path / "serving")])
    assert result.exit_code == 3, result.output
    lines = {line[:13].strip(): line[13:].strip() for line in result.stdout.splitlines()}
    assert lines["ready"].startswith("fail ") and lines["ready"].endswith(REFUSAL), result.stdout
    assert lines["serves"] == f"fail  did not load: {REFUSAL}", result.stdout
    assert "denylisted_ops" not in lines["ready"]  # said once, with its flag
    assert sorted(p.name for p in written.iterdir()) == []  # neither the init op nor a request ran
    assert not (tmp_path / "serving").exists()


def test_check_run_refuses_it_and_runs_it_when_its_op_is_allowed(writer: tuple[Path, Path]) -> None:
    export, written = writer
    refused = CliRunner().invoke(cli, ["inspect", "check", str(export), "--run"])
    assert refused.exit_code == 3, refused.output
    assert f"ERROR    run: not run: {REFUSAL}\n" in refused.stdout
    assert sorted(p.name for p in written.iterdir()) == []
    allowed = CliRunner().invoke(cli, ["inspect", "check", str(export), "--run", "--allow-op", "WriteFile"])
    assert allowed.exit_code == 0, allowed.output
    assert "OK       run: signature serving_default answered a request" in allowed.stdout
    assert "denylisted_ops: no denylisted ops" in allowed.stdout  # allowed by name: not denied either
    # what the refusal kept from running: the init op on loading, the signature on a request
    assert sorted(p.name for p in written.iterdir()) == ["init", "run"]
