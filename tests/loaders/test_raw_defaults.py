"""A raw signature fills missing values from the schema the export records, as parsing does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.loaders import load

pytestmark = pytest.mark.slow

ROW = {
    "island": "Dream",
    "bill_depth_mm": 18.0,
    "flipper_length_mm": 190,
    "body_mass_g": 3700,
    "sex": "female",
    "year": 2008,
}


def test_raw_signature_takes_the_schema_default(tiny_model: Any) -> None:
    with load(tiny_model.export("best")) as model:
        assert model.schema_defaults["bill_length_mm"] == pytest.approx(43.895, abs=1e-3)
        raw = model.predict([ROW], signature="raw:predict")
        parsed = model.predict([ROW], signature="predict")
        filled = model.predict(
            [{**ROW, "bill_length_mm": model.schema_defaults["bill_length_mm"]}], signature="raw:predict"
        )
    np.testing.assert_allclose(raw["probabilities"], parsed["probabilities"], rtol=1e-6)
    np.testing.assert_allclose(raw["probabilities"], filled["probabilities"], rtol=1e-6)


def test_predict_cli_keeps_rows_with_gaps_on_a_raw_signature(tiny_model: Any, tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "island,bill_length_mm,bill_depth_mm,flipper_length_mm,body_mass_g,sex,year\n"
        "Dream,,18.0,190,3700,female,2008\n"  # a gap with a default: kept
        ",39.0,18.0,190,3700,female,2008\n"  # island has no default: rejected
    )
    result = CliRunner().invoke(
        cli,
        [
            "predict",
            str(tiny_model.export("best")),
            "-i",
            str(rows),
            "-o",
            str(tmp_path / "p.jsonl"),
            "-s",
            "raw:predict",
            "--rejects",
            str(tmp_path / "r.jsonl"),
            "--max-rejects",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "rows in: 2, predicted: 1, rejected: 1" in result.output
    assert "field 'island': missing, and the feature has no default" in (tmp_path / "r.jsonl").read_text()
