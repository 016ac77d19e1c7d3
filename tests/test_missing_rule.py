"""One missing-value rule (``tfship.schema.CsvMissing``) for every reader of CSV and records:
the trainer's input_fn, schema records, and the client's record files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfship.errors import DataError
from tfship.schema import CsvMissing, Schema, csv_column_dtype, is_missing

TEXTS = ["", "  ", "None", "NA", "null"]
SCHEMA = Schema.from_dict(
    {
        "label": {"name": "y", "kind": "regression"},
        "features": [
            {"name": "text", "dtype": "string", "default": "<d>", "use": {"kind": "hash", "buckets": 4}},
            {"name": "x", "dtype": "float32", "default": -1.0},
        ],
    }
)


@pytest.mark.parametrize("text", TEXTS)
def test_a_string_record_value_is_a_value(text: str) -> None:
    assert not is_missing(text)
    assert SCHEMA.convert_record({"text": text, "x": 1.0}) == {"text": [text], "x": [1.0]}
    feature = SCHEMA.to_example({"text": text, "x": 1}).features.feature["text"]
    assert feature.bytes_list.value == [text.encode()]


def test_only_null_is_missing_in_records_and_a_token_is_not_a_number() -> None:
    assert SCHEMA.convert_record({"text": None}) == {"text": ["<d>"], "x": [-1.0]}
    with pytest.raises(DataError, match=r"r:1: field 'x': expected float32, found 'NA'"):
        SCHEMA.convert_record({"x": "NA"}, where="r:1")


def test_csv_cells_by_column_type() -> None:
    rule = CsvMissing()
    assert [rule.cell(t, "string") for t in TEXTS] == [True, False, False, False, False]
    assert [rule.cell(t, "float32") for t in TEXTS] == [True] * 5
    row = SCHEMA.convert_record({"text": "NA", "x": " NA "}, csv=rule)
    assert row == {"text": ["NA"], "x": [-1.0]}
    assert SCHEMA.convert_record({"text": ""}, csv=rule) == {"text": ["<d>"], "x": [-1.0]}
    assert CsvMissing(strings=True).cell("NA", "string")
    assert not CsvMissing(na_values=()).cell("NA", "int64")
    assert csv_column_dtype(["1", "NA", ""]) == "int64"
    assert csv_column_dtype(["1", "NA"], CsvMissing(na_values=())) == "string"


@pytest.mark.slow
def test_trainer_csv_input_follows_the_rule(tmp_path: Path) -> None:
    from tfship.trainer import InputOptions, build_input_fn

    path = tmp_path / "train.csv"
    cells = [('""', "1.5"), ('"  "', "NA"), ("None", "None"), ("NA", ""), ("null", "null")]
    path.write_text("text,x,y\n" + "".join(f"{t},{x},0.5\n" for t, x in cells))
    input_fn = build_input_fn(SCHEMA, [str(path)], InputOptions(batch_size=8, epochs=1), training=False)
    features, _ = next(iter(input_fn()))
    assert [v.decode() for v in features["text"].numpy()] == ["<d>", "  ", "None", "NA", "null"]
    assert features["x"].numpy().tolist() == [1.5, -1.0, -1.0, -1.0, -1.0]


def test_client_csv_records_follow_the_rule(tmp_path: Path) -> None:
    from tfship.serve_client._cli import read_records

    path = tmp_path / "r.csv"
    path.write_text('text,x,n\n"  ",NA,1\nNone,2.5,\nNA,,3\n,null,4\n')
    records = read_records(path)
    assert [r["text"] for r in records] == ["  ", "None", "NA", None]
    assert [r["x"] for r in records] == [None, 2.5, None, None]
    assert [r["n"] for r in records] == [1, None, 3, 4]
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    assert [r["text"] for r in read_records(jsonl)] == TEXTS
