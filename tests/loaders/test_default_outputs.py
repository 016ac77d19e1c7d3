"""`tfship predict` without --outputs writes each row's answer, never a column that is constant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from loaders.support import EstimatorExports, estimator_predictions, make_rows
from loaders.test_job import write_csv
from tfship.cli import cli

pytestmark = pytest.mark.slow

N = 24


@pytest.fixture(scope="module")
def rows() -> dict[str, Any]:
    return make_rows(N, seed=41)


def _predict(model: Path, source: Path, out: Path, *args: str) -> pd.DataFrame:
    result = CliRunner().invoke(cli, ["predict", str(model), str(source), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    if out.suffix == ".jsonl":
        return pd.read_json(out, lines=True, dtype=False)
    return pd.read_csv(out, dtype={"class": str})


@pytest.mark.parametrize("signature", ["serving_default", "classification", "predict"])
@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_binary_classifier_writes_the_predicted_class_and_its_probability(
    estimator_exports: EstimatorExports,
    rows: dict[str, Any],
    tmp_path: Path,
    signature: str,
    suffix: str,
) -> None:
    source = write_csv(tmp_path / "in.csv", rows)
    frame = _predict(
        estimator_exports.parsing, source, tmp_path / f"out.{suffix}", "-s", signature, "--keep-columns", "id"
    )
    assert list(frame.columns) == ["id", "class", "probability"]
    want = estimator_predictions(estimator_exports, rows)["probabilities"]
    assert frame["class"].tolist() == [str(i) for i in want.argmax(axis=1)]
    np.testing.assert_allclose(frame["probability"], want.max(axis=1), rtol=1e-5)


def test_outputs_still_choose_the_raw_outputs(
    estimator_exports: EstimatorExports, rows: dict[str, Any], tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "in.csv", rows)
    frame = _predict(estimator_exports.parsing, source, tmp_path / "out.csv", "--outputs", "classes,scores")
    assert list(frame.columns) == ["classes_0", "classes_1", "scores_0", "scores_1"]


def test_a_regress_signature_writes_one_prediction_per_row(
    estimator_exports: EstimatorExports, rows: dict[str, Any], tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "in.csv", rows)
    frame = _predict(estimator_exports.parsing, source, tmp_path / "out.jsonl", "-s", "regression")
    assert list(frame.columns) == ["prediction"]
    want = estimator_predictions(estimator_exports, rows)["probabilities"][:, 1]
    np.testing.assert_allclose(frame["prediction"].astype(float), want, rtol=1e-5)


@pytest.mark.parametrize("signature", ["serving_default", "predict"])
def test_a_multiclass_model_writes_the_class_of_the_highest_probability(
    tiny_model: Any, tmp_path: Path, signature: str
) -> None:
    export = tiny_model.export("final")
    frame = _predict(export, tiny_model.eval_csv, tmp_path / "out.csv", "-s", signature)
    raw = _predict(
        export,
        tiny_model.eval_csv,
        tmp_path / "raw.csv",
        "-s",
        "predict",
        "--outputs",
        "classes,probabilities",
    )
    assert list(frame.columns) == ["class", "probability"]
    assert frame["class"].tolist() == raw["classes"].tolist()
    # a column per class, named by the class (the export answers its vocabulary)
    by_class = [f"probabilities_{name}" for name in tiny_model.schema.label.vocabulary]
    assert list(raw.columns) == ["classes", *by_class]
    probabilities = raw[by_class].to_numpy()
    np.testing.assert_allclose(frame["probability"], probabilities.max(axis=1), rtol=1e-5)
    best = [by_class[i].removeprefix("probabilities_") for i in probabilities.argmax(axis=1)]
    assert frame["class"].tolist() == best
