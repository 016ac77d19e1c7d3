"""The readers of record files: places, rejects, the one typing rule for CSV cells, JSON documents
and TFRecord files read without TensorFlow."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tfship.errors import DataError, InputError
from tfship.records import Chunk, Field, read_chunks, read_records
from tfship.records._shared import (
    MISSING,
    check_example,
    columns_of,
    example_columns,
    format_of,
    type_csv_records,
)
from tfship.schema import Schema

SCHEMA = {
    "label": {"name": "y", "kind": "binary"},
    "features": [
        {"name": "n", "dtype": "int64", "shape": [], "default": 0, "use": {"kind": "numeric"}},
        {"name": "x", "dtype": "float32", "shape": [2], "use": {"kind": "numeric"}},
        {"name": "s", "dtype": "string", "shape": [], "use": {"kind": "categorical", "vocabulary": ["a"]}},
    ],
}


def _examples(path: Path, records: list[dict[str, list[object]]]) -> Path:
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            feats = {}
            for name, values in record.items():
                if isinstance(values[0], str):
                    data = [str(v).encode() for v in values]
                    feats[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=data))
                elif isinstance(values[0], float):
                    feats[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
                else:
                    feats[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())
    return path


def test_csv_chunks_keep_lines_and_set_bad_rows_aside(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(b'\xef\xbb\xbfa,b\n1,"x, y"\n\n2,z,extra\n3,w\n')
    assert columns_of(path) == ["a", "b"]
    (chunk,) = list(read_chunks(path, chunk_rows=10))
    assert chunk.csv and chunk.lines.tolist() == [2, 5]
    assert chunk.columns == {"a": ["1", "3"], "b": ["x, y", "w"]}
    assert [(r.line, r.reason) for r in chunk.rejects] == [
        (4, "expected 2 CSV cells (as in the header), found 3")
    ]
    with pytest.raises(InputError, match=r"rows\.csv:4: expected 2 CSV cells"):
        read_records(path)


def test_csv_cells_are_typed_once_by_the_inference_rule(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("n,f,s,t\n81,1.5,NA,a\nNA, 2 ,x,\n3,,y,b\n")
    assert read_records(path) == [
        {"n": 81, "f": 1.5, "s": "NA", "t": "a"},  # "NA" is text in a string column
        {"f": 2.0, "s": "x"},  # missing cells are left out
        {"n": 3, "s": "y", "t": "b"},
    ]
    assert read_records(path, limit=1) == [{"n": 81, "f": 1.5, "s": "NA", "t": "a"}]


def test_a_word_in_a_column_of_numbers_is_read_as_text_with_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("education,name\n18,a\ntwelve,b\n16,c\n")
    with caplog.at_level("WARNING", logger="tfship.records"):
        records = read_records(path)
    assert [r["education"] for r in records] == ["18", "twelve", "16"]
    (note,) = [r.getMessage() for r in caplog.records]
    assert "column 'education' is read as text: 'twelve' (" in note
    assert "rows.csv:3) is not a number, though 2 of its 3 cells are" in note
    caplog.clear()
    path.write_text("name\nx\n12\n")  # mostly text: nothing to say
    with caplog.at_level("WARNING", logger="tfship.records"):
        read_records(path)
    assert caplog.records == []


def test_known_types_decide_and_a_bad_cell_is_named(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("n,x,s\n81,1|2,7\nabc,3|4,8\n")
    fields = {"n": Field("n", "string", ()), "x": Field("x", "float32", (2,))}
    assert read_records(path, fields=fields) == [
        {"n": "81", "x": [1.0, 2.0], "s": 7},
        {"n": "abc", "x": [3.0, 4.0], "s": 8},
    ]
    with pytest.raises(DataError, match=r"rows\.csv:3: field 'n': expected int64, found 'abc'"):
        read_records(path, fields={"n": Field("n", "int64", ())})
    assert type_csv_records([{"n": "81"}], {"n": Field("n", "string", ())}) == [{"n": "81"}]


def test_a_schema_types_and_checks_every_record(tmp_path: Path) -> None:
    schema = Schema.from_dict(SCHEMA)
    path = tmp_path / "rows.csv"
    path.write_text("n,x,s,y\n,1|2,007,1\n5,3|4,a,0\n")
    assert read_records(path, schema=schema) == [
        {"x": [1.0, 2.0], "s": "007", "y": 1},
        {"n": 5, "x": [3.0, 4.0], "s": "a", "y": 0},
    ]
    path.write_text("n,x,s,y\n1,1|2,a,1\n2,3,a,0\n")
    with pytest.raises(DataError, match=r"rows\.csv:3: field 'x': expected 2 values"):
        read_records(path, schema=schema)


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ('[\n  {"a": 1},\n\n  {"a": 2}\n]\n', [2, 4]),
        ('{"instances": [{"a": 1},\n {"a": 2}]}', [1, 2]),
        ('{"signature_name": "s", "examples": [\n{"a": 1}, {"a": 2}]}', [2, 2]),
        ('{"a": 1}\n{"a": 2}\n', [1, 2]),
    ],
)
def test_a_json_file_holds_a_list_wrapped_or_not_or_one_record_per_line(
    tmp_path: Path, text: str, lines: list[int]
) -> None:
    path = tmp_path / "records.json"
    path.write_text(text)
    assert format_of(path) == "jsonl"
    assert read_records(path) == [{"a": 1}, {"a": 2}]
    (chunk,) = list(read_chunks(path, chunk_rows=10))
    assert chunk.lines.tolist() == lines


def test_json_errors_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    path.write_text('[\n  {"a": 1},\n  [1, 2]\n]')
    with pytest.raises(InputError, match=r"records\.json:3: expected a JSON object, found list"):
        read_records(path)
    path.write_text('[\n  {"a": 1},\n  {"a": }\n]')
    with pytest.raises(InputError, match=r"records\.json:3: invalid JSON"):
        read_records(path)
    lines = tmp_path / "records.jsonl"
    lines.write_text('{"a": 1, "b": null}\n{"a": \n')
    (chunk,) = list(read_chunks(lines, chunk_rows=10))
    assert chunk.columns == {"a": [1], "b": [None]} and chunk.rejects[0].line == 2
    lines.write_text('{"a": 1, "b": null}\n{"b": 2}\n')
    (chunk,) = list(read_chunks(lines, chunk_rows=10))
    assert chunk.columns["a"][1] is MISSING
    assert read_records(lines) == [{"a": 1}, {"b": 2}]


def test_tfrecord_files_are_read_without_tensorflow(tmp_path: Path) -> None:
    path = _examples(tmp_path / "rows.tfrecord", [{"n": [1], "s": ["a"]}, {"n": [2, 3]}])
    zipped = tmp_path / "rows.tfrecord.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    code = (
        "import sys, json\nfrom pathlib import Path\n"
        "from tfship.records import read_chunks, example_columns\n"
        f"chunks = list(read_chunks(Path({str(zipped)!r}), 1))\n"
        "cols = [example_columns(c.serialized, ['n', 's']) for c in chunks]\n"
        "print(json.dumps([[c.lines.tolist(), col['n']] for c, col in zip(chunks, cols)]))\n"
        "print('tensorflow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [json.dumps([[[1], [1]], [[2], [[2, 3]]]]), "False"]
    records = read_records(path)
    assert len(records) == 2 and all(isinstance(r, bytes) for r in records)
    # a list of records, as read_records returns, as well as a chunk's array
    columns = example_columns(records, ["n", "s"])
    assert columns["n"] == [1, [2, 3]] and columns["s"][0] == "a" and columns["s"][1] is MISSING


def test_a_damaged_tfrecord_is_named(tmp_path: Path) -> None:
    path = _examples(tmp_path / "rows.tfrecord", [{"n": [1]}, {"n": [2]}])
    path.write_bytes(path.read_bytes()[:-3])
    wrong = r"rows\.tfrecord: corrupt TFRecord after record 1: the next record is truncated: expected"
    with pytest.raises(DataError, match=wrong):
        read_records(path)


def test_examples_are_checked_against_the_schema(tmp_path: Path) -> None:
    schema = Schema.from_dict(SCHEMA)
    rows: list[dict[str, list[object]]] = [{"x": [1.0, 2.0], "s": ["a"]}, {"x": ["1", "2"], "s": ["a"]}]
    path = _examples(tmp_path / "rows.tfrecord", rows)
    wrong = r"rows\.tfrecord:2: field 'x': expected float32 values \(float_list\), found a bytes_list"
    with pytest.raises(DataError, match=wrong):
        read_records(path, schema=schema)
    with pytest.raises(DataError, match="here: not a serialized tf.train.Example"):
        check_example(schema, b"\xff\xff\xff", "here")


def test_unknown_and_missing_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"unknown file type '\.txt'"):
        format_of(tmp_path / "rows.txt")
    with pytest.raises(InputError, match="no such file"):
        read_records(tmp_path / "absent.csv")


def test_json_lines_read_as_the_json_module_reads_them(tmp_path: Path) -> None:
    # Lines a fast parser could read otherwise: an integer beyond 64 bits, NaN, a lone
    # surrogate, a CRLF and a lone CR, a blank line, a BOM; each a row or a reject, by its line.
    path = tmp_path / "rows.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"n": 18446744073709551616, "x": 1}\r\n'
        b'{"n": 2, "x": NaN}\n'
        b"\n"
        b'{"n": 3, "s": "\\ud800"}\r'
        b'{"n": 4, "x": 1e400}\n'
        b'{"n": 5, \n'
        b"[6]\n"
        b'{"n": 7, "x": 2.5}'
    )
    (chunk,) = list(read_chunks(path, chunk_rows=100))
    assert chunk.lines.tolist() == [1, 2, 4, 5, 8]
    assert chunk.columns["n"] == [18446744073709551616, 2, 3, 4, 7]
    assert type(chunk.columns["n"][0]) is int
    x = chunk.columns["x"]
    assert x[0] == 1 and x[1] != x[1] and x[2] is MISSING and x[3] == float("inf") and x[4] == 2.5
    assert chunk.columns["s"][2] == "\ud800"
    assert [(r.line, r.reason.split(":")[0], r.record) for r in chunk.rejects] == [
        (6, "unparseable JSON", '{"n": 5, '),
        (7, "expected a JSON object, found list", "[6]"),
    ]
    assert chunk.texts is not None
    assert list(chunk.texts)[0] == '{"n": 18446744073709551616, "x": 1}'


def test_a_json_lines_chunk_holds_chunk_rows_lines_that_are_not_blank(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n  \nbad\n{"a": 3}\n{"a": 4}\n')
    chunks = list(read_chunks(path, chunk_rows=2))
    assert [(c.lines.tolist(), [r.line for r in c.rejects]) for c in chunks] == [
        ([1, 3], []),
        ([6], [5]),
        ([7], []),
    ]
    # blank lines are no row, but each chunk names those it skipped, for the job's note
    assert [c.blank_lines for c in chunks] == [[2], [4], []]
    fields = {"a": Field("a", "int64", ())}
    known = list(read_chunks(path, chunk_rows=2, wanted={"a"}, fields=fields))
    assert [c.blank_lines for c in known] == [[2], [4], []]


def test_a_json_line_that_is_not_utf8_or_nests_too_deep_is_a_reject(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "caf\xe9"}\n' + b"[" * 100_000 + b"\n" + b'{"a": 3}\n')
    (chunk,) = list(read_chunks(path, chunk_rows=10))
    assert chunk.columns == {"a": [1, 3]} and chunk.lines.tolist() == [1, 4]
    (latin, deep) = chunk.rejects
    assert (latin.line, deep.line) == (2, 3)
    assert latin.reason.startswith("not UTF-8 text (byte 0xe9 at byte 11 of the line)")
    assert deep.reason == "unparseable JSON: nested too deeply"
    with pytest.raises(InputError, match=r"rows\.jsonl:2: not UTF-8 text"):
        read_records(path)


def test_json_lines_read_and_convert_within_a_few_times_csv(tmp_path: Path) -> None:
    # The same table as CSV and as JSON Lines, read and converted side by side (best of three
    # each, in turns, so a busy machine slows both): JSONL took ~40x CSV's time when each line
    # and each value went through Python one at a time; ~3x now.
    import time

    import numpy as np

    from tfship.records._shared import convert_chunk
    from tfship.schema import CsvMissing

    rng = np.random.default_rng(0)
    rows = 20_000
    table = {
        "x": np.round(rng.normal(size=rows), 4).tolist(),
        "n": rng.integers(0, 1000, rows).tolist(),
        "s": rng.choice(["Adelie", "Gentoo", "Chinstrap"], rows).tolist(),
    }
    csv_path, jsonl_path = tmp_path / "t.csv", tmp_path / "t.jsonl"
    csv_path.write_text("x,n,s\n" + "".join(f"{x},{n},{s}\n" for x, n, s in zip(*table.values())))
    jsonl_path.write_text("".join(json.dumps(dict(zip(table, v))) + "\n" for v in zip(*table.values())))
    fields = {"x": Field("x", "float32", ()), "n": Field("n", "int64", ()), "s": Field("s", "string", ())}

    def read(path: Path) -> tuple[float, dict[str, list[object]]]:
        started = time.perf_counter()
        columns: dict[str, list[object]] = {name: [] for name in fields}
        for chunk in read_chunks(path, 16384, set(fields)):
            converted = convert_chunk(fields, chunk.columns, chunk.rows, CsvMissing() if chunk.csv else None)
            assert not converted.bad
            for name, column in converted.columns.items():
                columns[name].extend(np.asarray(column).tolist())
        return time.perf_counter() - started, columns

    read(csv_path)  # imports
    times: dict[Path, list[float]] = {csv_path: [], jsonl_path: []}
    for _ in range(3):
        for path in times:
            seconds, columns = read(path)
            times[path].append(seconds)
            assert columns["n"] == table["n"] and columns["s"] == table["s"]
            assert columns["x"] == np.asarray(table["x"], np.float32).tolist()
    assert min(times[jsonl_path]) < 8 * min(times[csv_path]), times


def test_plain_json_lines_are_read_by_arrow_when_the_fields_are_known(tmp_path: Path) -> None:
    import numpy as np

    fields = {"x": Field("x", "float32", ()), "n": Field("n", "int64", ()), "s": Field("s", "string", ())}
    path = tmp_path / "rows.jsonl"
    rows = [
        {"x": 1, "n": 2, "s": "a", "other": [1]},
        {"x": 2.5, "s": None},
        {"x": None, "n": 7, "s": "\u00e9"},
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\r\n" for r in rows).encode())
    (chunk,) = list(read_chunks(path, chunk_rows=10, wanted=set(fields), fields=fields))
    assert all(hasattr(c, "to_pylist") for c in chunk.columns.values())  # Arrow arrays
    assert {k: c.to_pylist() for k, c in chunk.columns.items()} == {
        "n": [2, None, 7],
        "s": ["a", None, "\u00e9"],
        "x": [1.0, 2.5, None],
    }
    assert chunk.names == ["n", "other", "s", "x"] and chunk.lines.tolist() == [1, 2, 3]
    assert chunk.texts is not None
    assert list(chunk.texts)[2] == json.dumps(rows[2])
    # an integer where a field takes strings: line by line, as Python values (from there on)
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"s": 3}, {"s": "b"}]))
    chunks = list(read_chunks(path, chunk_rows=2, wanted=set(fields), fields=fields))
    assert [c.lines.tolist() for c in chunks] == [[1, 2], [3, 4], [5]]
    assert hasattr(chunks[0].columns["s"], "to_pylist")
    assert chunks[1].columns["s"] == ["\u00e9", 3] and chunks[2].columns["s"] == ["b"]
    assert isinstance(chunks[1].lines, np.ndarray)


@pytest.mark.parametrize(
    "line",
    [
        '{"x": NaN, "n": 1, "s": "a"}',
        '{"x": -Infinity, "n": 1, "s": "a"}',
        '{"x": 18446744073709551616, "n": 1, "s": "a"}',
        '{"x": 1.5, "n": 18446744073709551616, "s": "a"}',
        '{"x": 0.12345678901234567890123, "n": 9223372036854775807, "s": "a"}',
        '{"x": 123456789012345678901234567890, "n": -9223372036854775808, "s": "a"}',
        '{"x": 1e400, "n": 1, "s": "a"}',
        '{"x": 1.5, "n": 1, "s": "NaN", "unused": NaN, "also": 99999999999999999999999}',
    ],
)
def test_arrow_reads_a_block_of_json_lines_as_the_json_module_would(tmp_path: Path, line: str) -> None:
    """A block Arrow reads gives the values and rejects of the line-by-line reader: an awkward
    value in a wanted column sends the block there, one in a column nobody reads does not."""
    import numpy as np

    from tfship.records._shared import convert_chunk

    fields = {"x": Field("x", "float64", ()), "n": Field("n", "int64", ()), "s": Field("s", "string", ())}
    path = tmp_path / "rows.jsonl"
    path.write_text('{"x": 2.25, "n": 5, "s": "b"}\n' + line + '\n{"x": -1, "n": 0, "s": "c"}\n')

    def read(known: dict[str, Field] | None) -> list[tuple[list[int], dict[str, list[object]], list[int]]]:
        out = []
        for chunk in read_chunks(path, 100, set(fields), known):
            converted = convert_chunk(fields, chunk.columns, chunk.rows, None, source="rows.jsonl")
            good = [row for row in range(chunk.rows) if row not in converted.bad]
            values = {k: [np.asarray(c).tolist()[row] for row in good] for k, c in converted.columns.items()}
            lines = chunk.lines.tolist()
            out.append(([lines[row] for row in good], values, [lines[row] for row in sorted(converted.bad)]))
        return out

    by_arrow, by_json = read(fields), read(None)
    assert repr(by_arrow) == repr(by_json)  # NaN == NaN for repr
    if "unused" in line:  # the plain block stayed with Arrow
        (chunk,) = list(read_chunks(path, 100, set(fields), fields))
        assert hasattr(chunk.columns["x"], "to_pylist")


def _tf_records(path: Path, records: list[bytes]) -> Path:
    """``records`` framed by TensorFlow's own writer."""
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return path


def _serialized(chunk: Chunk) -> list[bytes]:
    """A TFRecord chunk's records (a TFRecord reader's chunks always carry them)."""
    assert chunk.serialized is not None
    return list(chunk.serialized)


@pytest.mark.parametrize("chunk_rows", [1, 7, 1024, 50_000])
def test_tfrecord_chunks_hold_chunk_rows_records_in_order(tmp_path: Path, chunk_rows: int) -> None:
    records = [b"record %d" % i + b"." * (i % 300) for i in range(20_000)]
    path = _tf_records(tmp_path / "rows.tfrecord", records)
    chunks = list(read_chunks(path, chunk_rows))
    assert [len(c.lines) for c in chunks[:-1]] == [chunk_rows] * (len(chunks) - 1)
    assert [r for c in chunks for r in _serialized(c)] == records
    assert [n for c in chunks for n in c.lines.tolist()] == list(range(1, 20_001))


def test_a_corrupt_record_deep_in_a_tfrecord_is_named(tmp_path: Path) -> None:
    records = [b"record %d" % i for i in range(20_000)]
    path = _tf_records(tmp_path / "rows.tfrecord", records)
    data = bytearray(path.read_bytes())
    data[sum(16 + len(r) for r in records[:12_345]) + 14] ^= 1  # in record 12345's data
    path.write_bytes(bytes(data))
    wrong = r"rows\.tfrecord: corrupt TFRecord after record 12345: the next record is corrupt \(data CRC"
    seen: list[bytes] = []
    with pytest.raises(DataError, match=wrong):
        for chunk in read_chunks(path, 1000):
            seen.extend(_serialized(chunk))
    assert seen == records[:12_000]
