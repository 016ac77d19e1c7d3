"""Chunk conversion for batch jobs: raw columns from a file to typed columns, bad rows set aside.

Unlike ``predict`` (which raises at the first problem), a batch job must keep going: every
row that cannot be converted gets a reason, and the others go on. CSV cells arrive as Arrow
string arrays and are converted with Arrow kernels (fast path); a chunk where a kernel fails
is converted again value by value, only to find which rows are bad. The rules are the
schema's: in CSV an empty cell is missing, a token such as ``NA`` too but only for a numeric
feature (:class:`tfship.schema.CsvMissing`), and ``|`` separates the values of a multi-valued
cell; elsewhere only a null is missing and a string is always a value. An integer feature
accepts ``3.0`` but not ``3.5``. A value missing in some rows may take its default, but a
column missing from the file (a renamed or dropped header name) is refused unless the caller
asks for the defaults (``fill_missing_columns``), and then a warning names the columns.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfship._values import CSV_LIST_SEPARATOR, CsvMissing, field_values, overflows
from tfship._values import MISSING as _MISSING
from tfship.records._fields import Column, Field, SparseColumn, coo_from_lengths, empty_sparse
from tfship.schema import MissingColumnError

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

Array = npt.NDArray[Any]
_FLOAT_MAX = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0}
_INT_RANGE = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}
_PLACEHOLDER = {"string": "", "float32": "0", "float64": "0", "int64": "0", "int32": "0"}


@dataclass
class Converted:
    """Typed columns for every row of a chunk (bad rows hold placeholders) and the bad rows."""

    columns: dict[str, Column]
    bad: dict[int, str] = field(default_factory=dict)

    def mark(self, rows: Sequence[int] | Array, reason: str) -> None:
        for row in np.asarray(rows, dtype=np.int64).tolist():
            self.bad.setdefault(row, reason)


def check_columns(
    fields: Mapping[str, Field],
    columns: Collection[str],
    source: str,
    *,
    fill_missing_columns: bool = False,
    warn: bool = True,
    where: str = "the schema",
) -> list[str]:
    """The fields that a file's ``columns`` lack and that will take their default.

    A feature without a default is never filled. With ``fill_missing_columns`` the others are
    (a warning names them, unless ``warn`` is false); without it, any missing field is refused.

    Raises:
        MissingColumnError: names the first missing field, the nearest column name and the file.

    Example:
        >>> import numpy as np
        >>> age = Field("age", "int64", (), default=np.asarray(0))
        >>> check_columns({"age": age}, ["name"], "people.csv", fill_missing_columns=True, warn=False)
        ['age']
        >>> try:
        ...     check_columns({"age": Field("age", "int64", ())}, ["Age"], "a.csv")
        ... except MissingColumnError as exc:
        ...     print(exc)
        a.csv: no column 'age' (did you mean 'Age'?), required by the schema (no default); the file has: Age
    """
    missing = [name for name in fields if name not in columns]
    if not missing:
        return []
    required = [name for name in missing if fields[name].required]
    if required or not fill_missing_columns:
        ordered = required + [n for n in missing if n not in required]
        unused = [c for c in columns if c not in fields]
        raise MissingColumnError(
            source, ordered, list(columns), fillable=not required, where=where, candidates=unused
        )
    if warn:
        log.warning(
            "%s: no column %s: every row takes the feature's default", source, ", ".join(map(repr, missing))
        )
    return missing


def convert_chunk(
    fields: Mapping[str, Field],
    raw: Mapping[str, Any],
    rows: int,
    csv: CsvMissing | None = None,
    *,
    source: str = "input",
    fill_missing_columns: bool = False,
    where: str = "the schema",
) -> Converted:
    """Convert the raw columns of one chunk; ``raw`` maps names to Arrow arrays or lists.

    ``csv`` is the missing-cell rule when the chunk's cells are CSV text; ``None`` for typed
    sources (JSON, Parquet, TFRecord), where only a null is missing. A field with no column
    in ``raw`` at all is refused (see :func:`check_columns`).

    Raises:
        MissingColumnError: a field has no column in ``raw`` (named with ``source``).
    """
    if rows:
        check_columns(fields, raw, source, fill_missing_columns=fill_missing_columns, warn=False, where=where)
    out = Converted({})
    for name, fld in fields.items():
        column = raw.get(name)
        if column is None:
            out.columns[name] = _absent(fld, rows, out)
        elif isinstance(column, list):
            out.columns[name] = _from_python(fld, column, out, csv)
        else:
            out.columns[name] = _from_arrow(fld, column, out, csv)
    return out


def _absent(fld: Field, rows: int, out: Converted) -> Column:
    if fld.sparse:
        return empty_sparse(fld, rows)
    if fld.default is None:
        out.mark(range(rows), f"field {fld.name!r}: missing, and the feature has no default")
        return _placeholder(fld, rows)
    return np.broadcast_to(fld.default, (rows, *fld.default.shape)).copy()


def _np_dtype(name: str) -> npt.DTypeLike:
    return object if name == "string" else np.dtype(name)


def _placeholder(fld: Field, rows: int) -> Array:
    shape = tuple(d or 1 for d in fld.shape or ())
    if fld.dtype == "string":
        return np.full((rows, *shape), "", dtype=object)
    return np.zeros((rows, *shape), dtype=_np_dtype(fld.dtype))


def select_rows(column: Column, keep: Array) -> Column:
    """The rows of ``column`` where the boolean mask ``keep`` is true."""
    if not isinstance(column, SparseColumn):
        return column[keep]
    new_row = np.cumsum(keep) - 1
    entries = keep[column.indices[:, 0]] if column.indices.size else np.zeros(0, bool)
    indices = column.indices[entries].copy()
    if indices.size:
        indices[:, 0] = new_row[indices[:, 0]]
    width = int(indices[:, 1].max()) + 1 if indices.size else 0
    return SparseColumn(indices, column.values[entries], np.array([int(keep.sum()), width]))


def slice_rows(column: Column, start: int, stop: int) -> Column:
    """Rows ``start:stop`` of a column."""
    if not isinstance(column, SparseColumn):
        return column[start:stop]
    keep = np.zeros(column.rows, dtype=bool)
    keep[start:stop] = True
    return select_rows(column, keep)


# -- python values (JSON records, Examples, fallbacks) ---------------------------------------------


def convert_value(fld: Field, value: object, csv: CsvMissing | None = None) -> list[Any]:
    """The values of one field of one record, by ``tfship.schema``'s one rule (``field_values``);
    ValueError with the reason when it is bad.

    ``csv`` is the missing-cell rule when ``value`` is a CSV cell; ``None`` for typed values.
    """
    if value is _MISSING:
        value = None
    default = None if fld.default is None else list(fld.default.reshape(-1).tolist())
    return field_values(fld.name, fld.dtype, None if fld.sparse else fld.shape or (), default, value, csv)


def _from_python(fld: Field, values: list[Any], out: Converted, csv: CsvMissing | None = None) -> Column:
    if csv is None and fld.shape == () and not fld.sparse:
        fast = _typed_python(fld, values, out)
        if fast is not None:
            return fast
    per_row: list[list[Any]] = []
    for row, value in enumerate(values):
        try:
            per_row.append(convert_value(fld, value, csv))
        except ValueError as exc:
            out.mark([row], str(exc))
            per_row.append([] if fld.sparse else _placeholder(fld, 1).reshape(-1).tolist())
    if fld.sparse:
        lengths = np.fromiter((len(v) for v in per_row), np.int64, len(per_row))
        flat = [v for vals in per_row for v in vals]
        return _sparse(fld, lengths, np.asarray(flat, dtype=_np_dtype(fld.dtype)))
    shape = tuple(d or 1 for d in fld.shape or ())
    return np.asarray(per_row, dtype=_np_dtype(fld.dtype)).reshape((len(values), *shape))


#: Python types whose values a scalar field of each kind of dtype takes as they are.
_PLAIN_TYPES: dict[str, set[type]] = {"float": {int, float}, "int": {int}, "string": {str}}
#: the types of a missing value: None, and ``MISSING`` (a bare object)
_GAP_TYPES = {type(None), type(_MISSING)}
_KINDS = {
    "string": "string",
    "float16": "float",
    "float32": "float",
    "float64": "float",
    "int32": "int",
    "int64": "int",
}


def _typed_python(fld: Field, values: list[Any], out: Converted) -> Array | None:
    """A scalar column of typed values (JSON numbers, JSON strings) converted at once, or None
    when some value needs :func:`convert_value` (a bool, a string for a number, an int for a
    string, a value out of range): the same values and reasons as value by value."""
    kind = _KINDS.get(fld.dtype)
    if kind is None:
        return None
    types = set(map(type, values))
    gaps = bool(types & _GAP_TYPES)
    missing = np.zeros(len(values), dtype=bool)
    if gaps:
        missing = np.fromiter((v is None or v is _MISSING for v in values), bool, len(values))
        types = set(map(type, (v for v in values if v is not None and v is not _MISSING)))
    if not types <= _PLAIN_TYPES[kind]:
        return None
    if kind == "string":
        strings = np.empty(len(values), dtype=object)
        strings[:] = [v if isinstance(v, str) else "" for v in values] if gaps else values
        return _fill_missing(fld, strings, missing, out)
    gap = math.nan if kind == "float" else 0
    filled = [gap if v is None or v is _MISSING else v for v in values] if gaps else values
    try:
        numbers: Array = np.asarray(filled, dtype=np.float64 if kind == "float" else np.int64)
    except OverflowError:
        return None
    if kind == "float":
        missing |= np.isnan(numbers)  # a NaN is missing, as a null is
        finite = numbers[np.isfinite(numbers)]
        if finite.size and np.abs(finite).max() > _FLOAT_MAX.get(fld.dtype, math.inf):
            return None
        numbers[missing] = 0.0
    else:
        low, high = _INT_RANGE[fld.dtype]
        if numbers.size and (numbers.min() < low or numbers.max() > high):
            return None
    return _fill_missing(fld, numbers.astype(fld.dtype), missing, out)


def _sparse(fld: Field, lengths: Array, flat: Array) -> SparseColumn:
    if flat.size == 0:
        flat = np.zeros(0, dtype=_np_dtype(fld.dtype))
    return coo_from_lengths(lengths, flat)


# -- arrow columns (CSV cells, Parquet columns) --------------------------------------------------


def _from_arrow(
    fld: Field, column: pa.Array | pa.ChunkedArray, out: Converted, csv: CsvMissing | None
) -> Column:
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        fast = _typed_arrow(fld, column)
        if fast is not None:
            return fast
        return _from_python(fld, column.to_pylist(), out)
    if csv is None:
        # A typed source's strings (Parquet): only a null cell is missing.
        if fld.dtype == "string" and fld.shape == () and not fld.sparse:
            values = np.asarray(column.fill_null("").to_numpy(zero_copy_only=False), dtype=object)
            return _fill_missing(fld, values, column.is_null().to_numpy(zero_copy_only=False), out)
        return _from_python(fld, column.to_pylist(), out)
    try:
        return _text_arrow(fld, column, out, csv)
    except (pa.ArrowInvalid, ValueError):
        # Some cell does not parse: find which, value by value.
        return _from_python(fld, column.to_pylist(), out, csv)


def _typed_arrow(fld: Field, column: pa.Array) -> Array | None:
    """A numeric Parquet column that needs no conversion at all, else None."""
    import pyarrow as pa

    if fld.sparse or fld.shape != () or column.null_count:
        return None
    if fld.dtype == "string" or not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        return None
    values: Array = column.to_numpy(zero_copy_only=False)
    if values.dtype == np.dtype(fld.dtype):
        return values
    if values.dtype.kind in "iu" and fld.dtype.startswith("float"):
        if values.size and int(np.abs(values).max()) > 2**24:
            return None
        return values.astype(fld.dtype)
    if values.dtype.kind == "f" and fld.dtype.startswith("float"):
        return values.astype(fld.dtype)
    return None


def _missing_mask(cells: pa.Array, dtype: str, csv: CsvMissing) -> pa.BooleanArray:
    import pyarrow as pa
    import pyarrow.compute as pc

    tokens = pa.array(sorted(csv.tokens(dtype)), pa.string())
    return pc.or_kleene(pc.is_null(cells), pc.is_in(cells, value_set=tokens)).fill_null(True)


def _cast(values: pa.Array, dtype: str) -> Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    result: Array
    if dtype == "string":
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
    if dtype.startswith("int"):
        # "3.0" is a whole number: Arrow's int parser refuses it, so go through float64 and check.
        try:
            result = pc.cast(values, pa.int64()).to_numpy(zero_copy_only=False).astype(dtype)
            return result
        except pa.ArrowInvalid:
            floats: Array = pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)
            low, high = _INT_RANGE.get(dtype, (-(2**63), 2**63 - 1))
            # float64 cannot hold 2**63 - 1 exactly: stay strictly inside the range.
            whole = np.isfinite(floats) & (floats == np.round(floats))
            if not np.all(whole & (floats > low) & (floats < high)):
                raise ValueError("not whole numbers in range") from None
            return floats.astype(dtype)
    as_float64: Array = pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)
    limit = _FLOAT_MAX.get(dtype, math.inf)
    finite = as_float64[np.isfinite(as_float64)]
    if finite.size and np.abs(finite).max() > limit:
        raise ValueError(f"values out of the range of {dtype}")
    infinite = np.flatnonzero(np.isinf(as_float64))
    if infinite.size and any(overflows(str(values[int(i)].as_py()), float(as_float64[i])) for i in infinite):
        raise ValueError(f"values out of the range of {dtype}")  # the slow path names the rows
    result = as_float64.astype(dtype)
    return result


def _text_arrow(fld: Field, column: pa.Array, out: Converted, csv: CsvMissing) -> Column:
    import pyarrow as pa
    import pyarrow.compute as pc

    # Numbers are read without surrounding spaces; a string cell is kept exactly as written.
    source = pc.utf8_trim_whitespace(column) if csv.strips(fld.dtype) else column
    missing = _missing_mask(source, fld.dtype, csv).to_numpy(zero_copy_only=False)
    rows = len(column)
    if fld.shape == () and not fld.sparse:
        placeholder = _PLACEHOLDER.get(fld.dtype, "0")
        filled = pc.if_else(pa.array(missing), placeholder, source)
        values = _cast(filled, fld.dtype)
        return _fill_missing(fld, values, missing, out)
    # Like the schema, a numeric multi-valued cell is trimmed as a whole, then split.
    cells = pc.if_else(pa.array(missing), pa.scalar(None, pa.string()), source)
    lists = pc.split_pattern(cells, CSV_LIST_SEPARATOR)
    lengths = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(lists)
    if fld.dtype != "string":
        flat = pc.utf8_trim_whitespace(flat)
    values = _cast(flat, fld.dtype)
    if fld.sparse:
        return _sparse(fld, lengths.astype(np.int64), values)
    return _fixed_lists(fld, lengths, values, missing, rows, out)


def _fill_missing(fld: Field, values: Array, missing: Array, out: Converted) -> Array:
    if not missing.any():
        return values
    if fld.default is None:
        out.mark(np.flatnonzero(missing), f"field {fld.name!r}: missing, and the feature has no default")
        return values
    values = values.copy()
    values[missing] = fld.default.reshape(-1).tolist()[0]  # a str, not numpy's str_, as value by value
    return values


def _fixed_lists(fld: Field, lengths: Array, flat: Array, missing: Array, rows: int, out: Converted) -> Array:
    shape = tuple(d or 1 for d in fld.shape or ())
    size = math.prod(shape)
    result = _placeholder(fld, rows).reshape(rows, size)
    wrong = (lengths != size) & ~missing
    if wrong.any():
        for row in np.flatnonzero(wrong).tolist():
            out.mark(
                [row],
                f"field {fld.name!r}: expected {size} values (shape {list(shape)}), "
                f"found {int(lengths[row])}",
            )
    ok = (lengths == size) & ~missing
    entries = np.repeat(ok, lengths)
    result[ok] = flat[entries].reshape(-1, size)
    if missing.any():
        if fld.default is None:
            out.mark(np.flatnonzero(missing), f"field {fld.name!r}: missing, and the feature has no default")
        else:
            result[missing] = fld.default.reshape(-1)
    return result.reshape((rows, *shape))
