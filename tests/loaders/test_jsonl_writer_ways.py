"""The JSONL writer says a value the same way in every chunk, whichever way wrote it.

Arrow's kernels write the usual columns; text that needs an escape is escaped value by value;
a column they do not take (a 3-D output, a kept float column with a NaN) is written row by row.
The same rows are scored in files that take each way (a file is always a chunk of its own),
and their lines compared byte for byte, and with the model's own values.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfship.loaders import JobSpec, load, run_job

pytestmark = pytest.mark.slow

ROWS = 16  # rows per chunk: each block of the input below is one chunk
XS = [
    0.1,
    1.0,
    -0.0,
    123456789.0,
    1e-7,
    2.5e9,
    -3.75,
    7.0,
    0.333,
    1e-30,
    42.0,
    -1e10,
    0.5,
    3.0,
    65504.0,
    9.99,
]
NAMES = (["Adelie", "Gentoo é ☃", "-", "a,b", "]", "x" * 40, "Chinstrap", "%s", "ok"] * 2)[:ROWS]
FIRST_OUTPUT = ',"b":'  # the outputs come after the kept columns, in the signature's key order


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SavedModel with an output of each kind the writer meets: floats of every width, 1-D and
    [batch, k], integers, booleans, text, rows that are all the same, and an empty row."""
    import tensorflow as tf

    def outputs(x: Any, s: Any) -> dict[str, Any]:
        n = tf.shape(x)[0]
        whole = tf.round(tf.where(tf.math.is_finite(x), x, tf.zeros_like(x)))
        return {
            "b": x > 0,
            "cube": tf.reshape(tf.stack([x, x * 2.0], axis=1), [n, 1, 2]),
            "b_k": tf.stack([x > 0, x < 0], axis=1),
            "empty": tf.zeros([n, 0], tf.float32),
            "f16": tf.cast(x / 1e6, tf.float16),
            "f32": x * 0.1,
            "f32_k": tf.stack([x, x * 1e-9, x * 1e20, tf.round(x)], axis=1),
            "f64": tf.cast(x, tf.float64) / 3.0,
            "i64": tf.cast(whole, tf.int64) * 1000000007,
            "i32_k": tf.cast(tf.stack([whole, -whole], axis=1) / 1e3, tf.int32),
            "names": s,
            "names_1": tf.expand_dims(s, 1),
            "names_k": tf.stack([s, tf.strings.join([s, "!"])], axis=1),
            "same": tf.tile(tf.constant([[0, 1, 2]]), [n, 1]),
            "same_names": tf.tile(tf.constant([["Adelie", "Gentoo"]]), [n, 1]),
            "u8": tf.cast(tf.abs(whole) % 256.0, tf.uint8),
        }

    module = tf.Module()
    spec = [tf.TensorSpec([None], tf.float32, name="x"), tf.TensorSpec([None], tf.string, name="s")]
    module.f = tf.function(outputs, spec, autograph=False)
    path = tmp_path_factory.mktemp("kinds") / "1"
    tf.saved_model.save(module, str(path), signatures=module.f)
    return path


def _block(label: str, last_x: float | None = None) -> list[list[Any]]:
    xs = XS if last_x is None else [*XS[:-1], last_x]
    return [[i, label % i, x, NAMES[i]] for i, x in enumerate(xs)]


def _score(model_path: Path, tmp_path: Path, blocks: list[list[list[Any]]]) -> list[list[str]]:
    """Score each block as a file of its own, keeping ``id`` and ``label``; each one's lines."""
    sources = []
    for number, block in enumerate(blocks):
        sources.append(tmp_path / f"in-{number}.csv")
        with open(sources[-1], "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "label", "x", "s"])
            writer.writerows(block)
    out = tmp_path / "out.jsonl"
    # no missing-value token: a "nan" is the float
    spec = JobSpec(
        [str(p) for p in sources], out, keep_columns=["id", "label"], batch_size=ROWS, na_values=["#none"]
    )
    with load(model_path) as model:
        summary = run_job(model, spec, progress=False)
    assert summary.predicted == ROWS * len(blocks) and summary.rejected == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    return [lines[i : i + ROWS] for i in range(0, len(lines), ROWS)]


def _outputs_text(line: str) -> str:
    at = line.index(FIRST_OUTPUT)
    return line[at:]


def test_every_way_writes_the_outputs_in_the_same_bytes(kinds: Path, tmp_path: Path) -> None:
    arrow, escaped, non_finite = _score(
        kinds,
        tmp_path,
        [
            _block("plain %d"),
            _block('say "hi" %d \\ back'),  # kept text to escape, value by value
            _block("plain %d", last_x=math.nan),  # a NaN output: written NaN, as json writes it
        ],
    )
    for row in range(ROWS):
        assert _outputs_text(escaped[row]) == _outputs_text(arrow[row]), row
        if row < ROWS - 1:
            assert _outputs_text(non_finite[row]) == _outputs_text(arrow[row]), row
    assert json.loads(escaped[3])["label"] == 'say "hi" 3 \\ back'
    last = json.loads(non_finite[-1])
    assert math.isnan(last["f32"]) and math.isnan(last["f32_k"][0])
    assert '"f32":NaN,' in non_finite[-1] and '"cube":[[NaN,NaN]],' in non_finite[-1]


def test_the_lines_hold_the_model_s_values_in_their_shapes(kinds: Path, tmp_path: Path) -> None:
    (lines,) = _score(kinds, tmp_path, [_block("plain %d")])
    with load(kinds) as model:
        expected = model.run({"x": np.array(XS, dtype=np.float32), "s": np.array(NAMES, dtype=object)})
    for row, line in enumerate(lines):
        record = json.loads(line)
        assert list(record)[:2] == ["id", "label"] and record["id"] == str(row)  # kept as read
        assert list(record)[2:] == sorted(expected)
        for key, values in expected.items():
            want, got = values[row], record[key]
            if values.dtype == object:
                assert got == (want.decode() if values.ndim == 1 else [v.decode() for v in want]), key
            elif values.dtype.kind == "f":
                assert np.array_equal(np.asarray(got, dtype=values.dtype), want), key
            else:
                assert got == want.tolist(), key
    # a float32 as its shortest text (not 0.010000000707805157), a whole one with its point,
    # and the same in the 3-D output, which is written row by row
    assert '"f32":0.010000001,' in lines[0] and '"cube":[[0.1,0.2]],' in lines[0]
    assert '"f32_k":[1.0,1e-9,1e+20,1.0],' in lines[1] and '"cube":[[1.0,2.0]],' in lines[1]
    assert '"empty":[]' in lines[0] and '"same":[0,1,2]' in lines[0]


def test_a_kept_float_column_says_each_value_the_same_way_in_every_file(kinds: Path, tmp_path: Path) -> None:
    # Parquet keeps numbers as numpy: a kept float32 is written as the double it reads as, by
    # Arrow's kernels in the first file and row by row in the second, whose NaN Arrow does not take
    import pyarrow as pa
    import pyarrow.parquet as pq

    xs = np.array(XS, dtype=np.float32)
    with_nan = xs.copy()
    with_nan[-1] = np.nan
    sources = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for source, kept in zip(sources, (xs, with_nan)):
        table = {
            "k": pa.array(kept),
            "x": pa.array(xs),
            "s": pa.array(NAMES),
            "t": pa.array(['say "q"'] * ROWS),
        }
        pq.write_table(pa.table(table), source)
    out = tmp_path / "out.jsonl"
    spec = JobSpec([str(p) for p in sources], out, keep_columns=["k", "t"], batch_size=ROWS)
    with load(kinds) as model:
        run_job(model, spec, progress=False)
    lines = out.read_text(encoding="utf-8").splitlines()
    for row in range(ROWS - 1):
        assert json.loads(lines[row])["k"] == float(xs[row])
        assert lines[row] == lines[ROWS + row]
    assert lines[-1].startswith('{"k":NaN,"t":"say \\"q\\"",')
