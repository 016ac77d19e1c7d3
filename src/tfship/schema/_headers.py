"""File headers: a CSV file's column names and data lines by the one rule every CSV reader
follows, and the errors that name a bad line or a missing column (with the nearest name)."""

from __future__ import annotations

import csv
import difflib
from collections.abc import Iterable, Sequence
from typing import IO

from tfship.errors import DataError


def read_csv_header(stream: IO[bytes]) -> list[str]:
    """The column names on the first line of a binary CSV stream, which is left after that line.

    A UTF-8 byte-order mark (what spreadsheets write as "CSV UTF-8") is not part of the first
    name: every CSV reader of tfship takes its header from here, so inference, training and
    prediction see the same names. An empty file has no names.

    Example:
        >>> import io
        >>> read_csv_header(io.BytesIO(b"\\xef\\xbb\\xbfage,name\\n39,Ann\\n"))
        ['age', 'name']
    """
    raw = stream.readline()
    try:
        line = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = getattr(stream, "name", "the CSV file")
        raise DataError(f"{where}:1: {_not_utf8(exc)}") from None
    return next(csv.reader([line]), [])


def _not_utf8(exc: UnicodeDecodeError) -> str:
    byte = exc.object[exc.start : exc.start + 1].hex()
    return (
        f"not UTF-8 text (byte 0x{byte} at byte {exc.start + 1} of the line): "
        f'expected UTF-8; save the file as UTF-8 (a spreadsheet\'s "CSV UTF-8")'
    )


#: why a data line equal to the header is not a row
HEADER_REPEATED = "the header repeated (files joined with their headers?): not a row"


def csv_line_cells(line: bytes, names: Sequence[str]) -> list[str] | None:
    """The cells of one data line of a CSV file, by the one rule every CSV reader follows.

    ``line`` is the line's bytes without its line end (a trailing ``\\r`` is dropped here).
    A blank line (spaces at most) is no row and gives None; every reader skips it and says so.
    A line that is not UTF-8, cannot be parsed, has another number of cells than ``names``,
    or repeats the header is a bad row: ``CsvLineError`` says why, without file or line.

    Example:
        >>> csv_line_cells(b"1,Ann\\r", ["age", "name"])
        ['1', 'Ann']
        >>> csv_line_cells(b"  ", ["age", "name"]) is None
        True
        >>> csv_line_cells(b"age,name", ["age", "name"])
        Traceback (most recent call last):
        ...
        tfship.schema.CsvLineError: the header repeated (files joined with their headers?): not a row
    """
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CsvLineError(_not_utf8(exc)) from None
    try:
        cells = next(csv.reader([text], strict=True), [])
    except csv.Error as exc:
        raise CsvLineError(f"unparseable CSV line: {exc}") from None
    if len(cells) != len(names):
        raise CsvLineError(f"expected {len(names)} CSV cells (as in the header), found {len(cells)}")
    if cells == list(names):
        raise CsvLineError(HEADER_REPEATED)
    return cells


class CsvLineError(DataError):
    """Raised when a data line of a CSV file is not a row; the message says why (no place)."""


def nearest_name(name: str, names: Iterable[str]) -> str | None:
    """The name in ``names`` closest to a misspelled ``name`` (case first), or None.

    Example:
        >>> nearest_name("age", ["Name", "Age"])
        'Age'
    """
    candidates = list(names)
    same_case = [n for n in candidates if n.lower() == name.lower()]
    if same_case:
        return same_case[0]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'Age'?)`` for a misspelled name, or ``""``."""
    close = nearest_name(name, names)
    return f" (did you mean {close!r}?)" if close is not None else ""


class MissingColumnError(DataError):
    """Raised when a data file lacks a column of the schema; names it and the nearest name.

    ``candidates`` are the columns the nearest name is chosen from (default: all of them;
    a caller leaves out those the schema already uses).

    ``fillable`` is true when every missing column has a default (or takes any number of
    values), so the file can be read with the defaults filled in if the caller asks for it.
    """

    def __init__(
        self,
        source: str,
        missing: Sequence[str],
        columns: Sequence[str],
        *,
        fillable: bool,
        where: str = "the schema",
        candidates: Sequence[str] | None = None,
    ) -> None:
        first = missing[0]
        hint = did_you_mean(first, columns if candidates is None else candidates)
        more = f"; missing too: {', '.join(map(repr, missing[1:]))}" if len(missing) > 1 else ""
        why = (
            f"a feature of {where}: every row would take its default"
            if fillable
            else f"required by {where} (no default)"
        )
        shown = ", ".join(columns) if columns else "no columns"
        super().__init__(f"{source}: no column {first!r}{hint}, {why}{more}; the file has: {shown}")
        self.source = source
        self.missing = list(missing)
        self.fillable = fillable

    def with_option(self, option: str) -> MissingColumnError:
        """This error, ending with the option that fills the columns (when it can), for a command."""
        if self.fillable:
            self.args = (f"{self}; {option} fills them with their defaults",)
        return self
