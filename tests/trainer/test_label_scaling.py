"""A regression label is learned standardised and answered in its own units."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.data import infer_schema
from tfship.loaders import load

pytestmark = pytest.mark.slow


def _write(path: Path, rows: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=rows)
    y = 150.0 + 50.0 * x + rng.normal(scale=5.0, size=rows)  # raw units, far from 0
    path.write_text("x,y\n" + "".join(f"{a:.4f},{b:.2f}\n" for a, b in zip(x, y)))
    return path


def test_regression_predictions_come_back_in_label_units(tmp_path: Path) -> None:
    train, evaluation = _write(tmp_path / "t.csv", 300, 0), _write(tmp_path / "e.csv", 60, 1)
    schema = infer_schema(train, "y")
    assert schema.label.scale is not None and abs(schema.label.scale[0] - 150) < 10
    schema.save(tmp_path / "s.json")
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "--schema",
            str(tmp_path / "s.json"),
            "--train",
            str(train),
            "--eval",
            str(evaluation),
            "--model-dir",
            str(tmp_path / "m"),
            "--model",
            "linear",
            "--max-steps",
            "150",
            "--learning-rate",
            "0.1",
            "--export",
            "best,final",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    export = summary["exports"]["final"][0]
    with load(export) as model:
        predicted = model.predict({"x": [-1.0, 0.0, 1.0]}, signature="predict")["predictions"].ravel()
        rows = [line.split(",") for line in evaluation.read_text().splitlines()[1:]]
        xs, ys = np.array([float(r[0]) for r in rows]), np.array([float(r[1]) for r in rows])
        on_eval = model.predict({"x": xs.tolist()}, signature="predict")["predictions"].ravel()
    # y = 150 + 50 x: a model that learned the standardised label answers in the label's units
    assert predicted == pytest.approx([100.0, 150.0, 200.0], abs=20.0)
    # and the summary speaks in them too: loss is the mean squared error in the label's units
    metrics = summary["metrics"]
    assert metrics["rmse"] == pytest.approx(float(np.sqrt(np.mean((on_eval - ys) ** 2))), rel=1e-3)
    assert metrics["mae"] == pytest.approx(float(np.mean(np.abs(on_eval - ys))), rel=1e-3)
    assert metrics["average_loss"] == pytest.approx(metrics["rmse"] ** 2, rel=1e-4)
    # loss is the mean of the evaluation batches' mean squared errors, as Estimator computes it
    assert metrics["loss"] == pytest.approx(metrics["rmse"] ** 2, rel=0.2)
    std = schema.label.scale[1]
    assert metrics["loss_standardized"] == pytest.approx(metrics["loss"] / std**2, rel=1e-2)
    assert metrics["average_loss_standardized"] == pytest.approx(metrics["average_loss"] / std**2, rel=1e-2)
    # the best exporter's record, which inspect versions shows, is in the same units
    record = json.loads((tmp_path / "m" / "export" / "best" / "tfship-best.json").read_text())
    assert record["metric"] == "loss" and record["value"] == record["metrics"]["loss"]
    assert record["metrics"]["loss"] == pytest.approx(record["metrics"]["rmse"] ** 2, rel=0.2)
    assert record["metrics"]["loss_standardized"] == pytest.approx(record["value"] / std**2, rel=1e-2)


def test_label_scaling_can_be_turned_off(tmp_path: Path) -> None:
    train, evaluation = _write(tmp_path / "t.csv", 100, 0), _write(tmp_path / "e.csv", 20, 1)
    infer_schema(train, "y").save(tmp_path / "s.json")
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "--schema",
            str(tmp_path / "s.json"),
            "--train",
            str(train),
            "--eval",
            str(evaluation),
            "--model-dir",
            str(tmp_path / "m"),
            "--model",
            "linear",
            "--max-steps",
            "5",
            "--export",
            "final",
            "--no-label-scaling",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "m" / "trainer.json").read_text())["model"]["label_scaling"] is False
