"""A feature whose column is missing from an input file is refused, not filled in silently."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.loaders import JobSpec, load, run_job
from tfship.schema import MissingColumnError


def _renamed(source: Path, target: Path, old: str, new: str) -> Path:
    lines = source.read_text().splitlines()
    lines[0] = ",".join(new if name == old else name for name in lines[0].split(","))
    target.write_text("\n".join(lines) + "\n")
    return target


def _predict(model: Path, source: Path, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(cli, ["predict", str(model), str(source), "-o", str(out), *extra])


def test_a_renamed_csv_column_is_refused_with_the_nearest_name(tiny_model: Any, tmp_path: Path) -> None:
    source = _renamed(tiny_model.eval_csv, tmp_path / "eval.csv", "bill_length_mm", "Bill_Length_mm")
    out = tmp_path / "preds.jsonl"
    result = _predict(tiny_model.export("best"), source, out)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(f"Error: {source}: no column 'bill_length_mm' (did you mean 'Bill_Length_mm'?)")
    assert line.endswith("--fill-missing-columns fills them with their defaults")
    assert len(line.splitlines()) == 1 and not out.exists()


def test_fill_missing_columns_uses_the_default_and_says_so(
    tiny_model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = _renamed(tiny_model.eval_csv, tmp_path / "eval.csv", "bill_length_mm", "Bill_Length_mm")
    out = tmp_path / "preds.jsonl"
    with caplog.at_level(logging.WARNING):
        result = _predict(tiny_model.export("best"), source, out, "--fill-missing-columns")
    assert result.exit_code == 0, result.output
    assert f"{source}: no column 'bill_length_mm': every row takes the feature's default" in caplog.text
    assert len(out.read_text().splitlines()) == 68


def test_a_column_without_a_default_is_not_filled(tiny_model: Any, tmp_path: Path) -> None:
    source = _renamed(tiny_model.eval_csv, tmp_path / "eval.csv", "island", "Island")
    result = _predict(tiny_model.export("best"), source, tmp_path / "p.jsonl", "--fill-missing-columns")
    assert result.exit_code == 2
    assert "no column 'island' (did you mean 'Island'?), required by signature" in result.stderr
    assert "--fill-missing-columns" not in result.stderr


def test_jsonl_and_parquet_files_without_a_column_are_refused(tiny_model: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [
        {
            "island": "Dream",
            "bill_len": 39.5,
            "bill_depth_mm": 17.0,
            "flipper_length_mm": 190,
            "body_mass_g": 3700,
            "sex": "female",
            "year": 2008,
        }
    ] * 3
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet)
    with load(tiny_model.export("best")) as model:
        for source in (jsonl, parquet):
            out = tmp_path / f"out-{source.suffix[1:]}.jsonl"
            with pytest.raises(
                MissingColumnError,
                match=r"no column 'bill_length_mm' \(did you mean "
                r"'bill_len'\?\)",
            ) as caught:
                run_job(model, JobSpec([str(source)], out))
            assert caught.value.fillable and caught.value.source == str(source)
            assert not out.exists()
            summary = run_job(model, JobSpec([str(source)], out, fill_missing_columns=True))
            assert summary.predicted == 3


def test_a_value_missing_in_some_rows_still_takes_the_default(tiny_model: Any, tmp_path: Path) -> None:
    records = [
        {
            "island": "Dream",
            "bill_length_mm": 39.5,
            "bill_depth_mm": 17.0,
            "flipper_length_mm": 190,
            "body_mass_g": 3700,
            "sex": "female",
            "year": 2008,
        }
    ]
    records.append({k: v for k, v in records[0].items() if k != "bill_length_mm"})
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    with load(tiny_model.export("best")) as model:
        assert run_job(model, JobSpec([str(jsonl)], tmp_path / "out.jsonl")).predicted == 2


def test_the_beam_runner_refuses_a_jsonl_file_without_a_column(tiny_model: Any, tmp_path: Path) -> None:
    records = [
        {
            "island": "Dream",
            "bill_len": 39.5,
            "bill_depth_mm": 17.0,
            "flipper_length_mm": 190,
            "body_mass_g": 3700,
            "sex": "female",
            "year": 2008,
        }
    ] * 3
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "beam.jsonl"
    result = _predict(tiny_model.export("best"), jsonl, out, "--runner", "beam")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: {jsonl}: no column 'bill_length_mm' (did you mean 'bill_len'?)")
    assert not out.exists()
