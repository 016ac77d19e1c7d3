"""`tfship predict -o x.jsonl`: the fast JSONL writer says what the CSV and Parquet writers say."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from loaders.support import EstimatorExports, make_rows, records_of
from tfship.cli import cli

pytestmark = pytest.mark.slow

# Text a row splitter could trip on: separators, brackets, quotes, % templates, escapes, nulls.
IDS = ["a,b", "],[", '"quoted"', "100%b %s", "line\nbreak", "naïve ☃", '{"b64": 1}', None, "", "x" * 300]
ALL = "all_class_ids,all_classes,class_ids,classes,logistic,logits,probabilities"


def _predict(model: Path, source: Path, out: Path, *args: str) -> None:
    result = CliRunner().invoke(
        cli,
        ["predict", str(model), str(source), "-o", str(out), "-s", "predict", "--keep-columns", "id", *args],
    )
    assert result.exit_code == 0, result.output


def _same(value: Any, expected: Any) -> bool:
    if value is None:  # pandas reads a null string cell as NaN
        return expected is None or (isinstance(expected, float) and math.isnan(expected))
    if isinstance(value, list):
        return (
            isinstance(expected, list)
            and len(value) == len(expected)
            and all(_same(v, e) for v, e in zip(value, expected))
        )
    if isinstance(value, float):
        return bool(value == pytest.approx(expected, rel=1e-7))
    return bool(value == expected)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jsonl") / "in.jsonl"
    records = records_of(make_rows(len(IDS) * 3, seed=51))
    path.write_text("".join(json.dumps({"id": IDS[i % len(IDS)], **r}) + "\n" for i, r in enumerate(records)))
    return path


@pytest.mark.parametrize("outputs", [(), ("--outputs", ALL)])
def test_jsonl_rows_hold_the_same_values_as_parquet_and_the_same_float_text_as_csv(
    estimator_exports: EstimatorExports, source: Path, tmp_path: Path, outputs: tuple[str, ...]
) -> None:
    paths = {fmt: tmp_path / f"out.{fmt}" for fmt in ("jsonl", "csv", "parquet")}
    for path in paths.values():
        _predict(estimator_exports.parsing, source, path, *outputs)
    lines = paths["jsonl"].read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == len(IDS) * 3
    assert [r["id"] for r in rows] == [IDS[i % len(IDS)] for i in range(len(rows))]
    parquet = pd.read_parquet(paths["parquet"])
    assert list(rows[0]) == list(parquet.columns)
    for row, (_, want) in zip(rows, parquet.iterrows()):
        for key, value in row.items():
            expected: Any = want[key]
            expected = expected.tolist() if hasattr(expected, "tolist") else expected
            if isinstance(expected, list) and expected and hasattr(expected[0], "tolist"):
                expected = [e.tolist() for e in expected]
            assert _same(value, expected), (key, value, expected)
    # float32 values are written as their shortest text, as the CSV writer writes them
    csv_cells = paths["csv"].read_text(encoding="utf-8")
    column = "probability" if not outputs else "logistic"
    for row in rows:
        value = row[column] if not outputs else row[column][0]
        assert json.dumps(value) in csv_cells
        assert len(repr(value)) <= 12  # not the float64 expansion of a float32


def test_dash_writes_the_rows_to_stdout_and_the_summary_to_stderr(
    estimator_exports: EstimatorExports, source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = str(estimator_exports.parsing)
    result = CliRunner().invoke(cli, ["predict", model, str(source), "-o", "-", "--keep-columns", "id"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == [IDS[i % len(IDS)] for i in range(len(IDS) * 3)]
    assert list(rows[0]) == ["id", "class", "probability"]
    assert result.stderr.startswith(f"rows in: {len(rows)}, predicted: {len(rows)}, rejected: 0")
    assert result.stderr.rstrip().endswith("-> <stdout>")
    as_csv = CliRunner().invoke(cli, ["predict", model, str(source), "-o", "-", "--format", "csv", "--json"])
    assert as_csv.exit_code == 0, as_csv.output
    assert as_csv.stdout.splitlines()[0] == '"class","probability"'
    assert json.loads(as_csv.stderr)["output"] == "<stdout>"
    refused = CliRunner().invoke(cli, ["predict", model, str(source), "-o", "-", "--format", "parquet"])
    assert refused.exit_code == 2
    assert refused.stderr == "Error: parquet output cannot go to standard output ('-'): give a file name\n"
    assert refused.stdout == ""
    assert not (tmp_path / "-").exists()
