"""Outputs are created as open() would create them (0666 & ~umask), not 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_predictions_and_rejects_follow_the_umask(tiny_model: object, tmp_path: Path, umask: int) -> None:
    export = tiny_model.export("best")  # type: ignore[attr-defined]
    rows = tmp_path / "rows.csv"
    text = tiny_model.eval_csv.read_text().splitlines()  # type: ignore[attr-defined]
    rows.write_text("\n".join([*text[:4], "Biscoe,not-a-number,1,2,3,male,2008,Adelie"]) + "\n")
    previous = os.umask(umask)
    try:
        result = CliRunner().invoke(
            cli,
            [
                "predict",
                str(export),
                "-i",
                str(rows),
                "-o",
                str(tmp_path / "p.csv"),
                "--rejects",
                str(tmp_path / "r.jsonl"),
                "--max-rejects",
                "5",
            ],
        )
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    for name in ("p.csv", "r.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name
