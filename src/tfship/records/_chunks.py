"""What every reader of record files yields: :class:`Chunk` s of rows, with :class:`Reject` s.

A chunk holds consecutive rows of one file as raw columns, each row with its file and line (record
number for Parquet and TFRecord), so that a rejected row can be found again. :class:`LazyLines`
keeps the text of a block's lines (CSV, JSON Lines) undecoded until a rejected row asks for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

Array = npt.NDArray[Any]

#: a column of a chunk as its reader hands it on: Arrow's (CSV, Parquet, JSON Lines read by
#: Arrow) or a Python list (JSON values, ``MISSING`` where a row lacks the name; CSV cell text).
RawColumn: TypeAlias = "pa.Array | pa.ChunkedArray | list[Any]"


@dataclass
class Reject:
    """A row that did not make it: where it was, why, and its text when it has one."""

    source: str
    line: int
    reason: str
    record: str | None = None

    def to_dict(self) -> dict[str, str | int | None]:
        return {"file": self.source, "line": self.line, "reason": self.reason, "record": self.record}


@dataclass
class Chunk:
    """Consecutive rows of one file, as raw columns (Arrow arrays or Python lists).

    ``serialized`` holds the records of a TFRecord file instead of columns; ``texts`` the raw
    text of each row (CSV, JSONL) for the rejects file. ``csv`` says the columns are CSV cell
    text, where missing values are spelled as tokens (see ``tfship.schema.CsvMissing``).
    ``names`` are all the names the rows of a JSONL chunk carry, kept or not (files with a
    header name theirs once, in the header).
    """

    source: str
    lines: Array
    columns: dict[str, Any]  # RawColumns; Any, so that code that knows a column's kind need not narrow it
    rejects: list[Reject] = field(default_factory=list)
    texts: Sequence[str] | None = None
    serialized: Array | None = None
    csv: bool = False
    names: Sequence[str] | None = None
    #: blank lines of a CSV or JSON Lines file, skipped by every reader (no row, good or bad)
    blank_lines: list[int] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return int(self.lines.size)


class LazyLines(Sequence[str]):
    """The text of each line of a block, decoded only if a rejected row asks for it."""

    def __init__(self, block: bytes) -> None:
        self.block = block
        self._lines: list[bytes] | None = None

    def _split(self) -> list[bytes]:
        if self._lines is None:
            self._lines = self.block.split(b"\n")[:-1]
        return self._lines

    def __len__(self) -> int:
        return len(self._split())

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._split()[index].rstrip(b"\r").decode("utf-8", "replace")
