"""``tfship export`` through click's CliRunner, on a model dir the trainer wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from export_helpers import numeric_dirs, saved_signatures

from tfship.cli import cli
from tfship.exporters import read_eval_history

pytestmark = pytest.mark.slow


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)


def test_export_newest_checkpoint_as_json(trained_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "serving"
    result = _run(
        [
            "--model-dir",
            str(trained_dir / "model"),
            "--schema",
            str(trained_dir / "schema.json"),
            "--receiver",
            "both",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["global_step"] == 10 and data["verified"] is True
    assert data["metrics"]["global_step"] == 10 and "loss" in data["metrics"]  # its evaluation
    assert numeric_dirs(out) == [str(data["version"])]
    sigs = saved_signatures(out / str(data["version"]))
    assert {"serving_default", "predict", "raw:predict"} <= set(sigs)
    assert sorted(sigs["raw:predict"].inputs) == ["color", "tags", "x"]


def test_export_best_by_metric_with_warmup_and_schema_from_model_dir(
    trained_dir: Path, tmp_path: Path
) -> None:
    warmup = tmp_path / "warmup.jsonl"
    warmup.write_text('{"x": 0.5, "color": "g", "tags": ["a"]}\n{"x": -1, "color": "b"}\n')
    out = tmp_path / "serving"
    result = _run(
        [
            "--model-dir",
            str(trained_dir / "model"),
            "--receiver",
            "raw",
            "--out",
            str(out),
            "--best-by",
            "loss:min",
            "--warmup",
            str(warmup.with_suffix(".csv")),
        ]
    )
    assert result.exit_code == 2 and "warmup file" in result.stderr and "does not exist" in result.stderr
    result = _run(
        [
            "--model-dir",
            str(trained_dir / "model"),
            "--receiver",
            "parsing",
            "--out",
            str(out),
            "--best-by",
            "loss:min",
            "--warmup",
            str(warmup),
        ]
    )
    assert result.exit_code == 0, result.output
    assert "verified    yes, 2 warmup requests replayed" in result.stdout
    assert "signature   serving_default" in result.stdout
    (version,) = numeric_dirs(out)
    meta = json.loads((out / version / "assets.extra" / "tfship.json").read_text())
    assert meta["exporter"]["best_by"] == ["loss", "min"]
    history = read_eval_history(trained_dir / "model")
    assert meta["metrics"]["loss"] == min(r.metrics["loss"] for r in history)
    assert meta["schema"]["label"]["name"] == "y"


def test_cli_errors_are_one_line(trained_dir: Path, tmp_path: Path) -> None:
    base = ["--model-dir", str(trained_dir / "model"), "--out", str(tmp_path / "o")]
    result = _run([*base, "--best-by", "nope:max"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: metric 'nope' not found") and "loss" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = _run([*base, "--checkpoint", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "checkpoint" in result.stderr
    result = _run([*base, "--best-by", "loss:up"])
    assert result.exit_code == 2 and "METRIC:MODE" in result.stderr
    result = _run([*base, "--best-by", "loss:min", "--checkpoint", "x"])
    assert result.exit_code == 2 and "exclusive" in result.stderr
