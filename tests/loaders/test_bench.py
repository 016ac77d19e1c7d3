"""`tfship bench`: the report has every batch size, with numbers that make sense."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loaders.support import EstimatorExports, KerasExport, make_rows
from loaders.test_job import write_csv
from tfship.cli import cli

pytestmark = pytest.mark.slow


def test_bench_reports_each_batch_size(estimator_exports: EstimatorExports) -> None:
    result = CliRunner().invoke(
        cli, ["bench", str(estimator_exports.parsing), "--batch-sizes", "1,8", "--seconds", "0.05", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["signature"] == "serving_default" and report["rows"] == "synthetic"
    assert [b["batch_size"] for b in report["batches"]] == [1, 8]
    for batch in report["batches"]:
        assert batch["calls"] >= 5
        assert 0 < batch["p50_ms"] <= batch["p99_ms"]
        assert batch["rows_per_second"] > 0
    assert report["load_seconds"] > 0


def test_bench_reads_rows_from_a_file(
    estimator_exports: EstimatorExports, keras_export: KerasExport, tmp_path: Path
) -> None:
    source = write_csv(tmp_path / "rows.csv", make_rows(5, seed=3))
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            str(estimator_exports.parsing),
            "-i",
            str(source),
            "--batch-sizes",
            "4,16",
            "--seconds",
            "0.05",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].endswith(f"rows {source}")
    assert [line.split()[0] for line in lines[3:]] == ["4", "16"]
    keras = CliRunner().invoke(
        cli, ["bench", str(keras_export.path), "--batch-sizes", "2", "--seconds", "0.05"]
    )
    assert keras.exit_code == 0, keras.output


def test_bench_rejects_a_bad_batch_size(estimator_exports: EstimatorExports) -> None:
    result = CliRunner().invoke(cli, ["bench", str(estimator_exports.parsing), "--batch-sizes", "1,zero"])
    assert result.exit_code == 2
    assert "'zero' is not a positive integer" in result.output
