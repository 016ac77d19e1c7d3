"""The JSONL writer's three ways (Arrow's kernels, orjson, ``json``) write the same bytes.

The Arrow way is taken for the usual outputs and kept columns; a column it does not take sends
the chunk to orjson, and a non-finite output to ``json``. A file must not say a value one way in
one chunk and another way in the next.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tfship.loaders import _jsonl_writer as jw
from tfship.loaders._output_values import keep_values
from tfship.loaders._writers import make_writer

ROWS = 40
_rng = np.random.default_rng(7)

#: columns the Arrow way takes: outputs (numpy) and kept columns (Arrow).
TAKEN: dict[str, Any] = {
    "float32": _rng.standard_normal(ROWS).astype(np.float32),
    "float32_whole": np.array([1.0, -0.0, 1e20, 123456789.0] * (ROWS // 4), dtype=np.float32),
    "float32_k": (_rng.standard_normal((ROWS, 3)) * 10.0 ** _rng.integers(-9, 9, (ROWS, 3))).astype(
        np.float32
    ),
    "float16": _rng.standard_normal(ROWS).astype(np.float16),
    "float64": _rng.standard_normal(ROWS),
    "int64": _rng.integers(-(2**62), 2**62, ROWS),
    "int32_k": _rng.integers(-5, 5, (ROWS, 2)).astype(np.int32),
    "uint64": np.full(ROWS, 2**64 - 1, dtype=np.uint64),
    "bool": _rng.random(ROWS) > 0.5,
    "bool_k": _rng.random((ROWS, 2)) > 0.5,
    "same_row": np.tile(np.array([[0, 1, 2]]), (ROWS, 1)),
    "same_names": np.tile(np.array([[b"Adelie", b"Gentoo"]], dtype=object), (ROWS, 1)),
    "names": np.array([b"Adelie", "Gentoo \u00e9 \u2603".encode()] * (ROWS // 2), dtype=object),
    "names_1": np.array([[b"a"], [b"bb"]] * (ROWS // 2), dtype=object),
    "names_k": np.array([[b"a", b"x", b""], [b"bb", b"c", b"d"]] * (ROWS // 2), dtype=object),
    "empty_k": np.zeros((ROWS, 0), dtype=np.float32),
    "kept_int": pa.array(list(range(ROWS))),
    "kept_int_nulls": pa.array([1, None] * (ROWS // 2)),
    "kept_bool_nulls": pa.array([True, None] * (ROWS // 2)),
    "kept_float": pa.array([1.5, 2.0] * (ROWS // 2)),
    "kept_float32": pa.array(np.full(ROWS, 0.3, dtype=np.float32)),
    "kept_text": pa.array(["x", None] * (ROWS // 2)),
    "kept_chunked": pa.chunked_array([pa.array(["a"] * (ROWS // 2)), pa.array(["b"] * (ROWS // 2))]),
}

#: columns it leaves to orjson: text to escape, bytes that are not UTF-8, floats with nulls, 3-D.
LEFT: dict[str, Any] = {
    "escaped": np.array([b'a"b', b"c\\d", b"e\nf", b"\x01"] * (ROWS // 4), dtype=object),
    "not_utf8": np.array([b"\xff", b"ok"] * (ROWS // 2), dtype=object),
    "kept_float_nulls": pa.array([1.5, None] * (ROWS // 2)),
    "three_d": np.arange(ROWS * 4, dtype=np.int64).reshape(ROWS, 2, 2),
    "kept_escaped": pa.array(['say "hi"'] * ROWS),
}


def _split(columns: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    keep = {k: v for k, v in columns.items() if not isinstance(v, np.ndarray)}
    return keep, {k: v for k, v in columns.items() if isinstance(v, np.ndarray)}


def _orjson_way(columns: dict[str, Any]) -> bytes:
    keep, outputs = _split(columns)
    values: dict[str, Any] = {k: keep_values(v) for k, v in keep.items()}
    values.update({k: jw._fast_values(v) for k, v in outputs.items()})
    data = jw._orjson_lines(values, ROWS)
    assert data is not None
    return data


def _written(tmp_path: Path, columns: dict[str, Any]) -> bytes:
    keep, outputs = _split(columns)
    writer = make_writer("jsonl", tmp_path / "out.jsonl")
    writer.write(keep, outputs)
    writer.close()
    return (tmp_path / "out.jsonl").read_bytes()


@pytest.mark.parametrize("name", sorted(TAKEN))
def test_the_arrow_way_takes_the_column_and_writes_what_orjson_writes(name: str) -> None:
    columns = {name: TAKEN[name]}
    data = jw._arrow_lines(columns, ROWS)
    assert data is not None, f"{name} was left to orjson"
    assert bytes(data) == _orjson_way(columns)


@pytest.mark.parametrize("name", sorted(LEFT))
def test_a_column_the_arrow_way_leaves_is_written_by_orjson_as_before(name: str, tmp_path: Path) -> None:
    columns = {"id": pa.array(list(range(ROWS))), name: LEFT[name]}
    assert jw._arrow_lines(columns, ROWS) is None
    assert _written(tmp_path, columns) == _orjson_way(columns)


def test_every_kind_in_one_chunk_reads_back_as_its_values(tmp_path: Path) -> None:
    keep, outputs = _split(TAKEN)
    columns = {**keep, **outputs}  # the writer's order: kept columns, then outputs
    data = _written(tmp_path, columns)
    assert data == _orjson_way(columns)
    lines = data.decode("utf-8").splitlines()
    assert len(lines) == ROWS
    for row, line in enumerate(lines):
        record = json.loads(line)
        assert list(record) == list(columns)
        assert record["float32"] == float(str(TAKEN["float32"][row]))  # float32's shortest text
        assert np.float32(record["float32_k"][2]) == TAKEN["float32_k"][row, 2]
        assert isinstance(record["float32_whole"], float)  # 1.0, not 1
        assert record["int64"] == int(TAKEN["int64"][row])
        assert record["names"] == TAKEN["names"][row].decode("utf-8")
        assert record["names_k"] == [v.decode() for v in TAKEN["names_k"][row]]
        assert record["same_names"] == ["Adelie", "Gentoo"]
        assert record["empty_k"] == []
        assert record["kept_int_nulls"] == (1 if row % 2 == 0 else None)
        assert record["kept_text"] == ("x" if row % 2 == 0 else None)
        assert record["kept_chunked"] == ("a" if row < ROWS // 2 else "b")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int64, np.bool_])
def test_a_kept_numpy_column_is_written_as_the_other_ways_write_it(dtype: Any, tmp_path: Path) -> None:
    # a Parquet column is kept as numpy: its floats are written as Python's floats, whichever way
    column = (_rng.standard_normal(ROWS) * 3).astype(dtype)
    writer = make_writer("jsonl", tmp_path / "out.jsonl")
    writer.write({"kept": column}, {"score": TAKEN["float32"]})
    writer.close()
    expected = jw._orjson_lines(
        {"kept": keep_values(column), "score": jw._fast_values(TAKEN["float32"])}, ROWS
    )
    assert (tmp_path / "out.jsonl").read_bytes() == expected


def test_a_non_finite_output_is_written_by_json_with_the_other_columns_unchanged(tmp_path: Path) -> None:
    scores = np.array([0.5, np.nan, np.inf, -np.inf] * (ROWS // 4), dtype=np.float32)
    columns = {"id": pa.array(list(range(ROWS))), "names": TAKEN["names"], "score": scores}
    lines = _written(tmp_path, columns).decode("utf-8").splitlines()
    assert [json.loads(line)["score"] for line in lines[:4]][0] == 0.5
    assert lines[1].endswith('"score":NaN}') and lines[2].endswith('"score":Infinity}')
    assert [json.loads(line)["id"] for line in lines] == list(range(ROWS))


def test_no_rows_write_nothing(tmp_path: Path) -> None:
    data = jw._arrow_lines({"x": np.zeros(0, dtype=np.float32)}, 0)
    assert data is not None and bytes(data) == b""
    assert _written(tmp_path, {"x": np.zeros(0, dtype=np.float32)}) == b""
