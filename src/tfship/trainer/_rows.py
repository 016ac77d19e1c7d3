"""Training rows checked before training starts: the loaders' conversion, bad rows named.

TensorFlow's CSV pipeline fails a whole training run on the first bad cell with a bare
``Graph execution error``. Every CSV row is read here first through the same checked
conversion as ``tfship predict`` (the schema's missing-value rule, float32 and int64 ranges, a
label in the vocabulary, the right number of fields), so a bad row is named by file, line,
column and value before anything is written. A few bad rows can be set aside: training then
reads copies of the affected files without them.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfship._files import atomic_write
from tfship.errors import DataError, value_text
from tfship.schema import CsvMissing, Schema

_CHUNK_ROWS = 65536


class _TooManyBadRows(DataError):
    """More bad rows than may be skipped; the command adds how to skip them."""


@dataclass
class BadRow:
    """A training row that cannot be used: where it is and why."""

    file: str
    line: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "reason": self.reason}


@dataclass
class RowCheck:
    """What the check found: rows read, the bad ones, and the files to train on."""

    files: list[str]
    rows: int = 0
    bad: list[BadRow] = field(default_factory=list)
    #: rows read per CSV file, bad ones included
    rows_by_file: dict[str, int] = field(default_factory=dict)
    #: blank lines (file, line): no row, skipped like every reader of tfship skips them
    blank: list[tuple[str, int]] = field(default_factory=list)

    def require_rows(self, role: str, files: Sequence[str]) -> None:
        """Refuse a set of CSV files (``role``: training, evaluation) that has no usable row.

        Raises:
            DataError: every file is empty (a header only), or every row is bad.
        """
        counted = [f for f in files if f in self.rows_by_file]
        if not counted or len(counted) < len(files):
            return  # TFRecord files are not counted here
        rows = sum(self.rows_by_file[f] for f in counted)
        bad = sum(1 for b in self.bad if b.file in set(counted))
        if rows - bad > 0:
            return
        names = ", ".join(counted)
        if rows == 0:
            raise DataError(
                f"no {role} rows: {names} {'holds' if len(counted) == 1 else 'hold'} a header only"
            )
        raise DataError(
            f"no {role} rows: every row of {names} is bad ({bad} bad row(s)); "
            f"first {self.bad[0].file}:{self.bad[0].line}: {self.bad[0].reason}"
        )

    def bad_counts(self, sets: Sequence[tuple[str, Sequence[str]]] = ()) -> str:
        """``3 bad row(s): 3 of 277 training rows in train.csv, 0 of 68 evaluation rows in
        eval.csv``: the bad rows against the rows of their own set, file by file in a set of
        several; without ``sets``, against each file's rows."""
        groups = list(sets) or [("", [f]) for f in self.files]
        parts = []
        for role, members in groups:
            counted = [f for f in dict.fromkeys(members) if f in self.rows_by_file]
            if not counted:
                continue  # TFRecord files are not counted here
            per_file = [(f, self._bad_in(f), self.rows_by_file[f]) for f in counted]
            rows = f"{role} rows" if role else "rows"
            total = f"{sum(b for _, b, _ in per_file)} of {sum(r for _, _, r in per_file)} {rows}"
            files = [f"{f} ({b} of {r})" if len(per_file) > 1 else f for f, b, r in per_file]
            parts.append(f"{total} in {' and '.join(files)}")
        return f"{len(self.bad)} bad row(s): {', '.join(parts)}"

    def _bad_in(self, file: str) -> int:
        return sum(1 for b in self.bad if b.file == file)


def _label_problems(schema: Schema, column: Any, rows: int) -> dict[int, str]:
    """Rows whose label is outside the vocabulary (the Head would fail the whole run)."""
    vocabulary = schema.label.vocabulary
    if not vocabulary:
        return {}
    values = column.to_pylist() if hasattr(column, "to_pylist") else list(column)
    allowed = set(vocabulary)
    return {
        i: f"field {schema.label.name!r}: {value_text(value)} is not one of the label's classes "
        f"({', '.join(vocabulary)})"
        for i, value in enumerate(values[:rows])
        if value is not None and str(value) not in allowed
    }


def _label_reason(schema: Schema, reason: str) -> str:
    """A row without a label says so (the conversion knows the label only as a field without
    a default)."""
    if reason == f"field {schema.label.name!r}: missing, and the feature has no default":
        return f"field {schema.label.name!r}: no label (drop the rows without one)"
    return reason


def check_csv_rows(schema: Schema, files: Sequence[str], *, fill_missing_columns: bool = False) -> RowCheck:
    """Read every row of the CSV files through the loaders' conversion; name the bad ones.

    Raises:
        MissingColumnError: a file's header lacks a column of the schema (one with a default
            is allowed with ``fill_missing_columns``).
    """
    from tfship.records import read_chunks
    from tfship.records._shared import check_columns, columns_of, convert_chunk, schema_fields

    fields = schema_fields(schema)
    result = RowCheck(list(files))
    rule = CsvMissing()
    for name in dict.fromkeys(files):  # a file given twice (to train and to evaluate) is read once
        if not name.endswith(".csv"):
            continue
        # The input function names the filled columns when it reads the file.
        check_columns(
            fields, columns_of(Path(name)) or [], name, fill_missing_columns=fill_missing_columns, warn=False
        )
        result.rows_by_file.setdefault(name, 0)
        for chunk in read_chunks(Path(name), _CHUNK_ROWS, set(fields)):
            result.rows += chunk.rows + len(chunk.rejects)
            result.rows_by_file[name] += chunk.rows + len(chunk.rejects)
            result.bad.extend(BadRow(name, r.line, r.reason) for r in chunk.rejects)
            result.blank.extend((name, line) for line in chunk.blank_lines)
            converted = convert_chunk(
                fields,
                chunk.columns,
                chunk.rows,
                csv=rule,
                source=name,
                fill_missing_columns=fill_missing_columns,
            )
            problems = {
                **_label_problems(schema, chunk.columns.get(schema.label.name, []), chunk.rows),
                **{row: _label_reason(schema, why) for row, why in converted.bad.items()},
            }
            lines = chunk.lines.tolist()
            result.bad.extend(BadRow(name, int(lines[i]), why) for i, why in sorted(problems.items()))
    result.bad.sort(key=lambda b: (b.file, b.line))
    return result


@contextmanager
def checked_files(
    schema: Schema,
    files: Sequence[str],
    *,
    max_bad_rows: int,
    rejects: Path | None,
    echo: Callable[[str], object] | None = None,
    fill_missing_columns: bool = False,
    sets: Sequence[tuple[str, Sequence[str]]] = (),
) -> Iterator[list[str]]:
    """The files to train on once their rows are checked, for as long as training runs.

    ``sets`` names groups of ``files`` that must keep a row each: ``("training", [...])``.

    Raises:
        DataError: more bad rows than ``max_bad_rows`` (``_TooManyBadRows``); names the first
            (file:line: reason). A set of ``sets`` without a usable row.
    """
    check = check_csv_rows(schema, files, fill_missing_columns=fill_missing_columns)
    if len(check.bad) > max_bad_rows:
        first = check.bad[0]
        raise _TooManyBadRows(
            f"{first.file}:{first.line}: {first.reason} "
            f"({check.bad_counts(sets)}; {max_bad_rows} may be skipped)"
        )
    for role, members in sets:
        check.require_rows(role, members)
    if echo is not None and check.blank:
        echo(_blank_note(check.blank))
    if not check.bad and not check.blank:
        yield list(files)
        return
    if check.bad and rejects is not None:
        _write_rejects(rejects, check.bad)
    if check.bad and echo is not None:
        where = f"; listed in {rejects}" if rejects is not None else ""
        echo(
            f"skipping {check.bad_counts(sets)}; first {check.bad[0].file}:"
            f"{check.bad[0].line}: {check.bad[0].reason}{where}"
        )
    workdir = Path(tempfile.mkdtemp(prefix="tfship-train-rows-"))
    try:
        skipped = [(b.file, b.line) for b in check.bad] + check.blank
        yield _without_lines(files, skipped, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _blank_note(blank: list[tuple[str, int]]) -> str:
    shown = ", ".join(f"{file}:{line}" for file, line in blank[:5])
    more = f" and {len(blank) - 5} more" if len(blank) > 5 else ""
    return f"note: skipping {len(blank)} blank line(s), at {shown}{more}"


def _without_lines(files: Sequence[str], skipped: list[tuple[str, int]], workdir: Path) -> list[str]:
    """Copies of the files that hold skipped lines (bad rows, blank lines), without them; the
    other files as they are.

    The copy keeps every other line's bytes as they are: the reader numbers lines by their
    line ends, so TensorFlow's CSV decoding never sees a line the row check did not pass.
    """
    by_file: dict[str, set[int]] = {}
    for name, number in skipped:
        by_file.setdefault(name, set()).add(number)
    out = []
    for index, name in enumerate(files):
        lines = by_file.get(name)
        if not lines:
            out.append(name)
            continue
        target = workdir / f"{index}-{Path(name).name}"
        with open(name, "rb") as src, target.open("wb") as dst:
            for number, line in enumerate(src, start=1):
                if number not in lines:
                    dst.write(line if line.endswith(b"\n") else line + b"\n")
        out.append(str(target))
    return out


def _write_rejects(path: Path, bad: list[BadRow]) -> None:
    with atomic_write(path) as fh:
        for row in bad:
            fh.write(json.dumps(row.to_dict()) + "\n")
