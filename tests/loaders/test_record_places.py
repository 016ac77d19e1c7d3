"""A bad record of a warmup file is named by file and record, whatever the file's format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow

GOOD = {
    "island": "Dream",
    "bill_length_mm": 39.1,
    "bill_depth_mm": 18.7,
    "flipper_length_mm": 181,
    "body_mass_g": 3750,
    "sex": "male",
    "year": 2007,
}


def _example(record: dict[str, Any]) -> bytes:
    import tensorflow as tf

    feats = {}
    for name, value in record.items():
        if isinstance(value, str):
            feats[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
        elif isinstance(value, float):
            feats[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
        else:
            feats[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


def _write(kind: str, path: Path, records: list[dict[str, Any]]) -> Path:
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    elif kind == "parquet":
        pd.DataFrame(records).astype({"bill_length_mm": str}).to_parquet(path)
    else:
        import tensorflow as tf

        with tf.io.TFRecordWriter(str(path)) as writer:
            for record in records:
                writer.write(_example(record))
    return path


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("jsonl", "field 'bill_length_mm': expected float32, found 'abc'"),
        ("parquet", "field 'bill_length_mm': expected float32, found 'abc'"),
        ("tfrecord", "field 'bill_length_mm': expected float32 values (float_list), found a bytes_list"),
    ],
)
@pytest.mark.estimator  # tfship export --warmup
def test_export_names_the_file_and_record_of_a_bad_warmup_record(
    tiny_model: Any, tmp_path: Path, kind: str, reason: str
) -> None:
    records = [GOOD, {**GOOD, "year": 2008}, {**GOOD, "bill_length_mm": "abc"}]
    if kind == "parquet":
        records = [{**r, "bill_length_mm": str(r["bill_length_mm"])} for r in records]
    warmup = _write(kind, tmp_path / f"warmup.{kind}", records)
    out = tmp_path / "serving"
    result = CliRunner().invoke(
        cli, ["export", "--model-dir", str(tiny_model.model_dir), "--out", str(out), "--warmup", str(warmup)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: {warmup}:3: {reason}")
    assert result.stderr.count("\n") == 1
    assert not out.exists() or not any(out.iterdir())
