"""`tfship predict --runner beam`: the DirectRunner pipeline writes what the local runner writes."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import apache_beam  # noqa: F401  (make test installs Beam on both lanes: one missing fails here)
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from loaders.support import EstimatorExports, make_rows
from loaders.test_job import BAD_LINES, write_csv, write_input
from tfship.cli import cli

pytestmark = pytest.mark.slow


def _run(model: Path, tmp: Path, runner: str, inputs: list[Path]) -> tuple[Any, Path, Path]:
    out, rejects = tmp / f"{runner}.csv", tmp / f"{runner}.rejects.jsonl"
    args = [
        "predict",
        str(model),
        "-o",
        str(out),
        "--rejects",
        str(rejects),
        "--keep-columns",
        "id",
        "--runner",
        runner,
        "--json",
    ]
    for path in inputs:
        args += ["-i", str(path)]
    if runner == "beam":
        args += ["--beam-option", "runner=DirectRunner"]
    return CliRunner().invoke(cli, args), out, rejects


def test_direct_runner_output_equals_the_local_path(
    estimator_exports: EstimatorExports, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = make_rows(30, seed=31)
    csv_in = write_csv(tmp_path / "a.csv", rows, extra=BAD_LINES)
    with open(csv_in, "a") as f:
        f.write("\n\n")  # blank lines are no rows: skipped, and said so
    jsonl_in = write_input("jsonl", tmp_path, make_rows(12, seed=32))
    with open(jsonl_in, "a") as f:
        f.write("{not json\n")
    inputs = [csv_in, jsonl_in]
    local, local_out, local_rejects = _run(estimator_exports.parsing, tmp_path, "local", inputs)
    with caplog.at_level(logging.WARNING, logger="tfship.loaders"):
        beam, beam_out, beam_rejects = _run(estimator_exports.parsing, tmp_path, "beam", inputs)
    assert "skipped 2 blank line(s) of the input(s): no rows" in [r.getMessage() for r in caplog.records]
    assert local.exit_code == 0, local.output
    assert beam.exit_code == 0, beam.output
    local_frame, beam_frame = pd.read_csv(local_out), pd.read_csv(beam_out)
    assert list(beam_frame.columns) == list(local_frame.columns)
    assert beam_frame["id"].tolist() == local_frame["id"].tolist()  # same rows, same order
    # Beam picks its own batch sizes: the last float bit may differ between batchings.
    assert list(local_frame.columns) == ["id", "class", "probability"]
    np.testing.assert_allclose(beam_frame["probability"], local_frame["probability"], rtol=1e-6)
    assert beam_frame["class"].tolist() == local_frame["class"].tolist()
    assert beam_rejects.read_text() == local_rejects.read_text()
    local_summary, beam_summary = json.loads(local.stdout), json.loads(beam.stdout)
    for key in ("rows_in", "predicted", "rejected"):
        assert beam_summary[key] == local_summary[key]
    assert beam_summary["rows_in"] == 30 + 3 + 12 + 1
    assert beam_summary["rejected"] == 4


def test_a_bad_beam_option_is_a_usage_error(estimator_exports: EstimatorExports, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "a.csv", make_rows(3, seed=1))
    result = CliRunner().invoke(
        cli,
        [
            "predict",
            str(estimator_exports.parsing),
            "-i",
            str(source),
            "-o",
            str(tmp_path / "o.csv"),
            "--runner",
            "beam",
            "--beam-option",
            "novalue",
        ],
    )
    assert result.exit_code == 2
    assert "Beam option 'novalue': expected KEY=VALUE" in result.stderr


def test_direct_runner_reads_tfrecords_with_kept_features(
    estimator_exports: EstimatorExports, tmp_path: Path
) -> None:
    source = write_input("tfrecord", tmp_path, make_rows(10, seed=33))
    local, local_out, _ = _run(estimator_exports.parsing, tmp_path, "local", [source])
    beam, beam_out, _ = _run(estimator_exports.parsing, tmp_path, "beam", [source])
    assert local.exit_code == 0 and beam.exit_code == 0, beam.output
    local_frame, beam_frame = pd.read_csv(local_out), pd.read_csv(beam_out)
    assert beam_frame["id"].tolist() == local_frame["id"].tolist() == [f"id{i}" for i in range(10)]
    np.testing.assert_allclose(beam_frame["probability"], local_frame["probability"], rtol=1e-6)
    assert beam_frame["class"].tolist() == local_frame["class"].tolist()


def test_direct_runner_names_the_jsonl_columns_it_ignores_and_refuses_them_when_asked(
    estimator_exports: EstimatorExports, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = write_input("jsonl", tmp_path, make_rows(4, seed=34))  # its "id" is not an input
    args = ["predict", str(estimator_exports.parsing), str(source), "--runner", "beam"]
    with caplog.at_level(logging.WARNING, logger="tfship.loaders"):
        ok = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "a.csv")])
    assert ok.exit_code == 0, ok.output
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ignored")]
    assert notes == [f"ignored column(s) 'id' of {source}: not inputs of signature 'serving_default'"]
    refused = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "b.csv"), "--no-ignore-unknown"])
    assert refused.exit_code == 2
    assert f"Error: {source}: column(s) 'id' not inputs of signature 'serving_default'" in refused.stderr
    assert not (tmp_path / "b.csv").exists()


def test_stdout_is_for_the_local_runner_only(estimator_exports: EstimatorExports, tmp_path: Path) -> None:
    source = write_input("jsonl", tmp_path, make_rows(2, seed=35))
    result = CliRunner().invoke(
        cli, ["predict", str(estimator_exports.parsing), str(source), "-o", "-", "--runner", "beam"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: the Beam runner writes files (a worker writes the output): '-' is local only\n"
    )
