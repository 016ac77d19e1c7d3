"""A bad training row is named before anything is written; a few can be set aside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.data import infer_schema, penguins_split

pytestmark = pytest.mark.slow


@pytest.fixture()
def dirty(tmp_path: Path) -> tuple[Path, Path, Path]:
    train, evaluation = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train, "species").save(schema)
    lines = train.read_text().splitlines()
    header = lines[0].split(",")
    bill = header.index("bill_length_mm")
    row = lines[5].split(",")
    row[bill] = "forty"  # line 6: not a number
    overflow = lines[6].split(",")
    overflow[bill] = "1e400"  # line 7: more than any float holds
    lines[5], lines[6] = ",".join(row), ",".join(overflow)
    lines.insert(8, "Dream,39.1")  # line 9: too few fields
    train.write_text("\n".join(lines) + "\n")
    return schema, train, evaluation


def _train(schema: Path, train: Path, evaluation: Path, model_dir: Path, *extra: str) -> object:
    return CliRunner().invoke(
        cli,
        [
            "train",
            "--schema",
            str(schema),
            "--train",
            str(train),
            "--eval",
            str(evaluation),
            "--model-dir",
            str(model_dir),
            "--model",
            "linear",
            "--max-steps",
            "5",
            "--export",
            "final",
            *extra,
        ],
    )


def test_a_bad_row_is_named_and_nothing_is_written(dirty: tuple[Path, Path, Path], tmp_path: Path) -> None:
    schema, train, evaluation = dirty
    result = _train(schema, train, evaluation, tmp_path / "model")
    assert result.exit_code == 2  # type: ignore[attr-defined]
    stderr = result.stderr  # type: ignore[attr-defined]
    assert stderr.startswith(f"Error: {train}:6: field 'bill_length_mm': expected float32, found 'forty'")
    # The bad rows are counted against their own file, not against training and evaluation rows together.
    assert (
        f"(3 bad row(s): 3 of 277 training rows in {train}, 0 of 68 evaluation rows in {evaluation}; "
        f"0 may be skipped); --max-bad-rows N skips up to N of them"
    ) in stderr
    assert "Graph execution error" not in stderr and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "model").exists()


def test_a_few_bad_rows_can_be_skipped(dirty: tuple[Path, Path, Path], tmp_path: Path) -> None:
    schema, train, evaluation = dirty
    rejects = tmp_path / "rejects.jsonl"
    result = _train(
        schema, train, evaluation, tmp_path / "model", "--max-bad-rows", "3", "--rejects", str(rejects)
    )
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert (
        f"skipping 3 bad row(s): 3 of 277 training rows in {train}, 0 of 68 evaluation rows in "
        f"{evaluation}; first {train}:6"
    ) in result.stderr  # type: ignore[attr-defined]
    listed = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [r["line"] for r in listed] == [6, 7, 9]
    assert "1e400" in listed[1]["reason"]
    assert "expected 8 CSV cells" in listed[2]["reason"]


def test_bad_rows_are_counted_per_file_of_a_set(dirty: tuple[Path, Path, Path], tmp_path: Path) -> None:
    schema, train, evaluation = dirty
    clean = tmp_path / "clean.csv"
    clean.write_text(evaluation.read_text())
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "--schema",
            str(schema),
            "--train",
            str(train),
            "--train",
            str(clean),
            "--eval",
            str(evaluation),
            "--model-dir",
            str(tmp_path / "model"),
            "--max-steps",
            "5",
        ],
    )
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert (
        f"(3 bad row(s): 3 of 345 training rows in {train} (3 of 277) and {clean} (0 of 68), "
        f"0 of 68 evaluation rows in {evaluation}; 0 may be skipped)"
    ) in result.stderr
