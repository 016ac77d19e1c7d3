"""One reading of a CSV file: ``schema infer``, ``train`` and ``predict`` judge each line alike.

Real exports are dirty: files joined with their headers repeat the header mid-file, a blank
line slips in (with Windows line ends too), and a spreadsheet saves a name in cp1252. A
repeated header is never data, a line that is not UTF-8 is a bad row named by file and line
(never a traceback), and a blank line is skipped with a note, by every reader alike.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.data import explain_schema, infer_schema, penguins_split
from tfship.records import read_chunks
from tfship.schema import HEADER_REPEATED

HEADER_LINE, BLANK_LINE, CP1252_LINE = 5, 8, 11
NOT_UTF8 = "not UTF-8 text (byte 0xe9 at byte 3 of the line): expected UTF-8"


def _dirty(folder: Path) -> tuple[Path, Path]:
    """The penguins' training rows with CRLF line ends, the header again at line 5, a blank
    line at 8 and a cp1252 ``é`` at 11; and the clean evaluation file."""
    train, evaluation = penguins_split(folder / "data")
    header, *body = train.read_text().splitlines()
    body.insert(HEADER_LINE - 2, header)
    body.insert(BLANK_LINE - 2, "")
    body[CP1252_LINE - 2] = "Ad\xe9lie" + body[CP1252_LINE - 2][len("Adelie") :]
    assert body[CP1252_LINE - 2].startswith("Adélie,")
    dirty = folder / "dirty.csv"
    dirty.write_bytes(b"".join(line.encode("cp1252") + b"\r\n" for line in [header, *body]))
    return dirty, evaluation


def test_the_readers_refuse_a_repeated_header_and_cp1252_and_skip_a_blank_line(tmp_path: Path) -> None:
    dirty, _ = _dirty(tmp_path)
    chunks = list(read_chunks(dirty, 1000))
    rejects = [(r.line, r.reason) for c in chunks for r in c.rejects]
    assert [line for line, _ in rejects] == [HEADER_LINE, CP1252_LINE]
    assert rejects[0][1] == HEADER_REPEATED
    assert rejects[1][1].startswith(NOT_UTF8)
    assert [line for c in chunks for line in c.blank_lines] == [BLANK_LINE]
    labels = [v for c in chunks for v in c.columns["species"]]
    assert "species" not in labels and len(labels) == sum(c.rows for c in chunks)


def test_a_repeated_header_in_a_clean_block_is_still_refused(tmp_path: Path) -> None:
    # No blank line: the block goes to Arrow's parser, which must not take the header as a row.
    source = tmp_path / "joined.csv"
    source.write_text("a,b\n1,x\n2,y\na,b\n3,z\n")
    chunks = list(read_chunks(source, 1000))
    assert [(r.line, r.reason) for c in chunks for r in c.rejects] == [(4, HEADER_REPEATED)]
    assert [str(v) for c in chunks for v in c.columns["b"]] == ["x", "y", "z"]


def test_schema_infer_leaves_a_repeated_header_out_of_the_label(tmp_path: Path) -> None:
    dirty, _ = _dirty(tmp_path)
    schema, reasons = explain_schema(dirty, "species")
    assert schema.label.vocabulary is not None
    assert list(schema.label.vocabulary) == ["Adelie", "Chinstrap", "Gentoo"]
    assert reasons[0].startswith(
        f"skipped 2 bad row(s): {dirty}:{HEADER_LINE}: {HEADER_REPEATED}; {dirty}:{CP1252_LINE}: {NOT_UTF8}"
    )
    assert reasons[1] == f"note: {dirty}: skipped 1 blank line(s), at line(s) {BLANK_LINE}"


def test_a_header_that_is_not_utf8_is_named_not_a_traceback(tmp_path: Path) -> None:
    source = tmp_path / "names.csv"
    source.write_bytes("Größe,label\n1,a\n".encode("cp1252"))
    result = CliRunner().invoke(cli, ["schema", "infer", str(source), "--label", "label"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {source}:1: not UTF-8 text")


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
            "final",
            *extra,
        ],
    )


@pytest.mark.estimator
@pytest.mark.slow
@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_train_skips_a_blank_line_before_tensorflow_reads_the_file(tmp_path: Path, line_end: str) -> None:
    train, evaluation = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train, "species").save(schema)
    lines = train.read_text().splitlines()
    lines.insert(3, "")  # line 4
    train.write_bytes(line_end.join(lines).encode() + line_end.encode())
    result = _train(schema, train, evaluation, tmp_path / "model")
    assert result.exit_code == 0, result.output
    assert f"note: skipping 1 blank line(s), at {train}:4" in result.stderr


@pytest.mark.estimator
@pytest.mark.slow
def test_schema_infer_train_and_predict_judge_each_dirty_line_alike(
    tiny_model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dirty, evaluation = _dirty(tmp_path)
    schema = tmp_path / "schema.json"
    inferred = CliRunner().invoke(
        cli, ["schema", "infer", str(dirty), "--label", "species", "-o", str(schema)]
    )
    assert inferred.exit_code == 0, inferred.output
    assert "'species'" not in json.dumps(json.loads(schema.read_text())["label"])

    train_rejects = tmp_path / "train-rejects.jsonl"
    trained = _train(
        schema, dirty, evaluation, tmp_path / "model", "--max-bad-rows", "2", "--rejects", str(train_rejects)
    )
    assert trained.exit_code == 0, trained.output

    predict_rejects = tmp_path / "predict-rejects.jsonl"
    with caplog.at_level(logging.WARNING, logger="tfship.loaders"):
        predicted = CliRunner().invoke(
            cli,
            [
                "predict",
                str(tiny_model.export("final")),
                str(dirty),
                "-o",
                str(tmp_path / "p.csv"),
                "--rejects",
                str(predict_rejects),
            ],
        )
    assert predicted.exit_code == 0, predicted.output
    assert "rejected: 2" in predicted.output

    def verdicts(path: Path) -> list[tuple[int, str]]:
        return [(r["line"], r["reason"]) for r in map(json.loads, path.read_text().splitlines())]

    by_train, by_predict = verdicts(train_rejects), verdicts(predict_rejects)
    assert by_train == by_predict
    assert [line for line, _ in by_train] == [HEADER_LINE, CP1252_LINE]
    for line, reason in by_train:  # schema infer names the same lines for the same reasons
        assert f"{dirty}:{line}: {reason}" in inferred.stderr
    # The blank line: skipped by all three, each saying so with its line.
    assert f"skipped 1 blank line(s), at line(s) {BLANK_LINE}" in inferred.stderr
    assert f"skipping 1 blank line(s), at {dirty}:{BLANK_LINE}" in trained.stderr
    assert f"skipped 1 blank line(s) of {dirty}, at line(s) {BLANK_LINE}" in caplog.text
