"""A training file whose header lacks a feature's column is refused before anything is written."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.data import infer_schema, penguins_split
from tfship.schema import MissingColumnError
from tfship.trainer import InputOptions, build_input_fn

pytestmark = pytest.mark.slow


@pytest.fixture()
def renamed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The penguins with ``bill_length_mm`` spelled ``Bill_length_mm`` in the training header."""
    train, evaluation = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train, "species").save(schema)
    lines = train.read_text().splitlines()
    lines[0] = lines[0].replace("bill_length_mm", "Bill_length_mm")
    train.write_text("\n".join(lines) + "\n")
    return schema, train, evaluation


def _train(schema: Path, train: Path, evaluation: Path, model_dir: Path, *extra: str) -> Any:
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
            "3",
            "--export",
            "",
            *extra,
        ],
    )


def test_a_renamed_column_is_refused_naming_it(renamed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    schema, train, evaluation = renamed
    result = _train(schema, train, evaluation, tmp_path / "model")
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(f"Error: {train}: no column 'bill_length_mm' (did you mean 'Bill_length_mm'?)")
    assert line.endswith("; --fill-missing-columns fills them with their defaults")
    assert len(line.splitlines()) == 1
    assert not (tmp_path / "model").exists()


def test_fill_missing_columns_trains_and_names_them(
    renamed: tuple[Path, Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    schema, train, evaluation = renamed
    with caplog.at_level(logging.WARNING):
        result = _train(schema, train, evaluation, tmp_path / "model", "--fill-missing-columns")
    assert result.exit_code == 0, result.output
    assert f"{train}: no column 'bill_length_mm': every row takes the feature's default" in caplog.text


def test_the_input_function_refuses_too(renamed: tuple[Path, Path, Path]) -> None:
    from tfship.schema import Schema

    schema_path, train, _ = renamed
    with pytest.raises(MissingColumnError, match="no column 'bill_length_mm'"):
        build_input_fn(Schema.load(schema_path), [str(train)], InputOptions(), training=True)


def test_files_with_different_headers_are_refused(tmp_path: Path) -> None:
    from tfship.errors import DataError

    train, evaluation = penguins_split(tmp_path / "data")
    schema = infer_schema(train, "species")
    lines = evaluation.read_text().splitlines()
    names = lines[0].split(",")
    names[1], names[2] = names[2], names[1]  # the same columns in another order
    lines[0] = ",".join(names)
    evaluation.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="its header differs from that of"):
        build_input_fn(schema, [str(train), str(evaluation)], InputOptions(), training=True)


def test_an_empty_training_or_eval_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    train, evaluation = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train, "species").save(schema)
    empty = tmp_path / "empty.csv"
    empty.write_text(train.read_text().splitlines()[0] + "\n")
    result = _train(schema, empty, evaluation, tmp_path / "model")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"Error: no training rows: {empty} holds a header only"
    result = _train(schema, train, empty, tmp_path / "model")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"Error: no evaluation rows: {empty} holds a header only"
    assert not (tmp_path / "model").exists()


def test_a_training_set_of_bad_rows_only_is_refused(tmp_path: Path) -> None:
    train, evaluation = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train, "species").save(schema)
    bad = tmp_path / "bad.csv"
    bad.write_text(train.read_text().splitlines()[0] + "\nDream,39.1\nDream,40\n")
    result = _train(schema, bad, evaluation, tmp_path / "model", "--max-bad-rows", "5")
    assert result.exit_code == 2, result.output
    expected = f"Error: no training rows: every row of {bad} is bad (2 bad row(s)); first {bad}:2:"
    assert expected in result.stderr
    assert not (tmp_path / "model").exists()


def test_the_input_function_refuses_an_empty_file(tmp_path: Path) -> None:
    from tfship.errors import DataError

    train, _ = penguins_split(tmp_path / "data")
    schema = infer_schema(train, "species")
    train.write_text(train.read_text().splitlines()[0] + "\n")
    with pytest.raises(DataError, match="no rows: .* holds a header only"):
        build_input_fn(schema, [str(train)], InputOptions(), training=True)
    records = tmp_path / "empty.tfrecord"
    records.write_bytes(b"")
    with pytest.raises(DataError, match="no rows: .*empty.tfrecord is empty"):
        build_input_fn(schema, [str(records)], InputOptions(), training=True)


def test_rows_without_a_label_are_named_with_the_remedy(tmp_path: Path) -> None:
    train, evaluation = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train, "species").save(schema)
    lines = train.read_text().splitlines()
    lines[3] = lines[3].replace(lines[3].split(",")[0], "", 1)  # species is the first column
    train.write_text("\n".join(lines) + "\n")
    result = _train(schema, train, evaluation, tmp_path / "model")
    assert result.exit_code == 2
    expected = f"Error: {train}:4: field 'species': no label (drop the rows without one)"
    assert result.stderr.startswith(expected)
    assert result.stderr.rstrip().endswith("--max-bad-rows N skips up to N of them")
