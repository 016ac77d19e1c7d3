"""The CSV reader: blocks of lines parsed by Arrow as text, line by line where a block is not plain.

Every cell stays text here (missing values spelled as tokens, see ``tfship.schema.CsvMissing``);
:func:`type_csv_records` types the cells of a handful of records once, by the one rule.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tfship.errors import DataError, value_text
from tfship.records._chunks import Array, Chunk, LazyLines, RawColumn, Reject
from tfship.records._fields import Field
from tfship.records._formats import open_binary
from tfship.schema import (  # importing it also lifts the csv module's cap on a cell
    CsvLineError,
    CsvMissing,
    csv_column_dtype,
    csv_line_cells,
    field_values,
    read_csv_header,
)

if TYPE_CHECKING:
    import pyarrow as pa

#: the value of a typed CSV cell (a multi-valued field's cell gives a list of them)
CellValue = str | int | float

log = logging.getLogger(__name__)


#: bytes of CSV parsed at once: about 25 thousand rows of a few numeric columns.
CSV_BLOCK_BYTES = 1 << 20


def csv_chunks(path: Path, chunk_rows: int, wanted: set[str] | None) -> Iterator[Chunk]:
    # Whole blocks of lines go to Arrow's parser: no Python object per line unless a row is
    # rejected. Line numbers come from counting newlines, so each block is checked to hold
    # one row per line (no blank lines, no quoted newlines) before they are trusted.
    with open_binary(path) as f:
        names = read_csv_header(f)
        if not names:
            return
        number = 1
        rest = b""
        while True:
            data = f.read(CSV_BLOCK_BYTES)
            if not data:
                if rest:
                    yield _csv_block(str(path), names, rest + b"\n", number, wanted)
                return
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            yield _csv_block(str(path), names, block, number, wanted)
            number += block.count(b"\n")


def _csv_block(source: str, names: list[str], block: bytes, first: int, wanted: set[str] | None) -> Chunk:
    count = block.count(b"\n")
    numbers = np.arange(first + 1, first + 1 + count, dtype=np.int64)
    texts = LazyLines(block)
    blank = b"\n\n" in block or b"\n\r\n" in block or block[:1] in (b"\n", b"\r")
    if not blank:
        try:
            table = _arrow_csv(block, names)
        except Exception:  # noqa: BLE001 - any Arrow parse failure (not UTF-8 too): the slow path
            table = None
        if table is not None and table.num_rows == count and not _holds_header(table, names):
            columns = {n: table.column(n) for n in names if wanted is None or n in wanted}
            return Chunk(source, numbers, columns, texts=texts, csv=True)
    return _csv_slow(source, names, block.split(b"\n")[:-1], numbers, wanted)


def _holds_header(table: pa.Table, names: list[str]) -> bool:
    """Whether a row may repeat the header: its first cell is the first name (checked whole on
    the line-by-line path)."""
    import pyarrow.compute as pc

    return bool(pc.any(pc.equal(table.column(0), names[0])).as_py())


def _arrow_csv(data: bytes, names: list[str]) -> pa.Table:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    # Every column is read as text; the conversion to the model's dtypes (with its own
    # missing-value and list rules) happens later, column by column.
    return pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
        parse_options=pacsv.ParseOptions(newlines_in_values=False),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


def _csv_slow(
    source: str, names: list[str], lines: list[bytes], numbers: Array, wanted: set[str] | None
) -> Chunk:
    rejects: list[Reject] = []
    blank: list[int] = []
    good_rows: list[list[str]] = []
    good_lines: list[int] = []
    good_texts: list[str] = []
    for line, number in zip(lines, numbers.tolist()):
        try:
            cells = csv_line_cells(line, names)
        except CsvLineError as exc:
            text = line.rstrip(b"\r").decode("utf-8", "replace")
            rejects.append(Reject(source, number, str(exc), text))
            continue
        if cells is None:
            blank.append(number)
            continue
        good_rows.append(cells)
        good_lines.append(number)
        good_texts.append(line.rstrip(b"\r").decode("utf-8"))
    columns: dict[str, RawColumn] = {}
    for i, name in enumerate(names):
        if wanted is None or name in wanted:
            columns[name] = [row[i] for row in good_rows]
    rows = np.asarray(good_lines, dtype=np.int64)
    return Chunk(source, rows, columns, rejects=rejects, texts=good_texts, csv=True, blank_lines=blank)


def type_csv_records(
    rows: Sequence[Mapping[str, str]],
    fields: Mapping[str, Field] | None = None,
    *,
    csv: CsvMissing | None = None,
    places: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """CSV rows of text cells as typed records, by the one rule for a record file's cells.

    A column named in ``fields`` takes its field's type (and a multi-valued field splits its
    cell on ``|``); any other column takes the type ``tfship schema infer`` gives it
    (``tfship.schema.csv_column_dtype``: ``int64`` when every cell is a whole number,
    ``float32`` when every cell is a number, else ``string``). A cell missing by the ``csv``
    rule (an empty cell anywhere, ``NA`` and its kin in a numeric column) is left out of its
    record; a string cell is kept exactly as written.

    Raises:
        DataError: a cell that is not of its field's type, named by its place (``places``,
            else its row number) and the field.

    Example:
        >>> type_csv_records([{"n": "81", "s": "NA"}, {"n": "NA", "s": "x"}])
        [{'n': 81, 's': 'NA'}, {'s': 'x'}]
        >>> type_csv_records([{"n": "81"}], {"n": Field("n", "string", ())})
        [{'n': '81'}]
    """
    rule = csv or CsvMissing()
    names = list(dict.fromkeys(name for row in rows for name in row))
    typed = dict(fields or {})
    for name in names:
        if name not in typed:
            dtype = csv_column_dtype((row.get(name, "") for row in rows), rule)
            if dtype == "string":
                _note_text_in_numbers(name, [row.get(name) for row in rows], rule, places)
            typed[name] = Field(name, dtype, ())
    out: list[dict[str, Any]] = []
    for number, row in enumerate(rows):
        record: dict[str, Any] = {}
        for name, text in row.items():
            fld = typed[name]
            if not isinstance(text, str):
                record[name] = text
            elif not rule.cell(text, fld.dtype):
                try:
                    record[name] = _typed_cell(fld, text, rule)
                except ValueError as exc:
                    place = places[number] if places is not None else f"row {number + 1}"
                    raise DataError(f"{place}: {exc}") from None
        out.append(record)
    return out


def _note_text_in_numbers(
    name: str, cells: Sequence[str | None], rule: CsvMissing, places: Sequence[str] | None
) -> None:
    """Say so when a column of numbers is read as text because of a few cells that are not."""
    present = [(i, c) for i, c in enumerate(cells) if isinstance(c, str) and not rule.cell(c, "float32")]
    words = [(i, c) for i, c in present if csv_column_dtype([c], rule) == "string"]
    if not words or len(words) * 2 >= len(present):
        return
    number, text = words[0]
    place = places[number] if places is not None else f"row {number + 1}"
    log.warning(
        "column %r is read as text: %s (%s) is not a number, though %d of its %d cells are; "
        "a schema (--schema FILE) reads it as numbers and names the bad cells",
        name,
        value_text(text),
        place,
        len(present) - len(words),
        len(present),
    )


def _typed_cell(fld: Field, text: str, rule: CsvMissing) -> CellValue | list[CellValue]:
    shape = None if fld.sparse else fld.shape
    values = field_values(fld.name, fld.dtype, shape, None, text, rule)
    return values[0] if shape == () else values
