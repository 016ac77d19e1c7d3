"""The value and missing rules of tfship, once: what a value is, when it is missing, how it is typed.

Every reader of records (the records' readers and chunk conversion, the trainer's row check,
schema inference, the client's record files) and the schema itself ask here, so a value means
the same thing everywhere. ``MISSING`` marks a value a record did not give (a key absent from a
record, an empty cell), distinct from any value it could give; :func:`is_missing` says which
given values count as missing (None and NaN anywhere, CSV cells by a :class:`CsvMissing` rule);
:func:`coerce_value` types one value without losing information and :func:`field_values` gives
the values one record gives a field. The public spellings are ``tfship.schema``'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tfship.errors import value_text

MISSING: Any = object()
"""A value a record does not give; readers put it where a key or a cell is absent."""

#: CSV cells that mean "missing" in a numeric column, as R, pandas and spreadsheets write them.
NA_VALUES: tuple[str, ...] = ("NA", "N/A", "NaN", "nan", "null", "NULL", "None")
# Values of a non-scalar feature inside one CSV cell.
CSV_LIST_SEPARATOR = "|"


@dataclass(frozen=True)
class CsvMissing:
    """Which CSV cells are missing: an empty cell anywhere; ``na_values`` in numeric columns.

    A CSV file has no null, so writers spell one: an empty cell, or a token such as ``NA``. In
    a numeric column such a token can only mean "missing" (it is compared after stripping
    spaces, as numbers are parsed). In a string column it is text a model may well see, so a
    string cell is a value exactly as written, spaces and all, and only an empty cell is
    missing, unless ``strings`` asks for the tokens there too. Outside CSV (JSON, Parquet,
    TFRecord, DataFrames, Python records) only a null is missing: see :func:`is_missing`.

    Example:
        >>> rule = CsvMissing()
        >>> rule.cell("NA", "float32"), rule.cell("NA", "string"), rule.cell("", "string")
        (True, False, True)
        >>> CsvMissing(na_values=("-",)).cell("NA", "float32")
        False
    """

    na_values: tuple[str, ...] = NA_VALUES
    strings: bool = False

    def tokens(self, dtype: str) -> frozenset[str]:
        """The cell texts that are missing in a ``dtype`` column (after :meth:`strips`)."""
        if dtype == "string" and not self.strings:
            return frozenset({""})
        return frozenset({"", *self.na_values})

    def strips(self, dtype: str) -> bool:
        """Whether cells of a ``dtype`` column are compared with surrounding spaces removed."""
        return dtype != "string"

    def cell(self, text: str, dtype: str) -> bool:
        """Whether the CSV cell ``text`` of a ``dtype`` column is missing."""
        return (text.strip() if self.strips(dtype) else text) in self.tokens(dtype)


def is_missing(value: Any, dtype: str = "string", csv: CsvMissing | None = None) -> bool:
    """Whether ``value`` is missing: None or NaN anywhere; CSV cells by the ``csv`` rule.

    Without ``csv`` (JSON, Parquet, TFRecord, DataFrames, Python records) a string is always a
    value, even ``""`` or ``"NA"``.

    Example:
        >>> is_missing(""), is_missing(None), is_missing("", csv=CsvMissing())
        (False, True, True)
    """
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return csv is not None and isinstance(value, str) and csv.cell(value, dtype)


def csv_column_dtype(cells: Iterable[str], csv: CsvMissing | None = None) -> str:
    """``int64``, ``float32`` or ``string``: the narrowest dtype of a CSV column's cells.

    A column is numeric when every cell that is not missing as a number parses as one.

    Example:
        >>> csv_column_dtype(["1", "NA", " 2"]), csv_column_dtype(["1.5", ""]), csv_column_dtype(["a", "1"])
        ('int64', 'float32', 'string')
    """
    rule = csv or CsvMissing()
    present = [c for c in cells if not rule.cell(c, "float32")]
    if not present:
        return "string"
    for dtype, parse in (("int64", int), ("float32", float)):
        try:
            for cell in present:
                parse(cell)
        except ValueError:
            continue
        return dtype
    return "string"


_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float16": 65504.0}
_INFINITIES = frozenset({"inf", "infinity"})


def overflows(text: str, number: float) -> bool:
    """Whether a number's text is finite but too large for any float (``1e400``): parsing
    makes it an infinity nobody wrote, which would turn a loss into ``inf``.

    Example:
        >>> overflows("1e400", float("1e400")), overflows("-Infinity", float("-inf"))
        (True, False)
    """
    return math.isinf(number) and text.strip().lstrip("+-").lower() not in _INFINITIES


_INT_RANGE = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}


def coerce_value(dtype: str, value: Any) -> Any:
    """One value as ``dtype``'s Python type (str, float or int), never losing information.

    Raises:
        ValueError: not a number, not a whole number for an int dtype, or out of the dtype's range.
        TypeError: a bool, list or dict where a number is expected, or a non-string for strings.

    Example:
        >>> coerce_value("int64", "7.0"), coerce_value("float32", b"2.5")
        (7, 2.5)
    """
    if dtype == "string":
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return str(value)
        raise TypeError(f"expected a string, found {type(value).__name__}")
    if isinstance(value, (bool, list, dict)):
        raise TypeError(f"expected a number, found {type(value).__name__}")
    if isinstance(value, bytes):
        value = value.decode()
    if dtype.startswith("float"):
        try:
            number = float(value.strip() if isinstance(value, str) else value)
        except OverflowError:  # an int of more than ~308 digits
            digits = len(str(abs(int(value))))
            raise ValueError(f"a whole number of {digits} digits is out of the range of {dtype}") from None
        if math.isfinite(number) and abs(number) > _FLOAT_MAX.get(dtype, math.inf):
            raise ValueError(f"{value_text(value)} is out of the range of {dtype}")
        if isinstance(value, str) and overflows(value, number):
            raise ValueError(f"{value_text(value)} is out of the range of {dtype}")
        return number
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"):
        whole = int(value)
    else:
        number = float(value.strip() if isinstance(value, str) else value)
        if not number.is_integer():
            raise ValueError(f"{value_text(value)} is not a whole number")
        whole = int(number)
    low, high = _INT_RANGE.get(dtype, (-(2**63), 2**63 - 1))
    if not low <= whole <= high:
        raise ValueError(f"{value_text(value)} is out of the range of {dtype}")
    return whole


def _split_values(value: Any, dtype: str, csv: CsvMissing | None) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "reshape") and hasattr(value, "tolist"):  # a numpy array
        return list(value.reshape(-1).tolist())
    if csv is not None and isinstance(value, str):
        # A CSV cell holds the values of a multi-valued feature, separated by "|".
        text = value.strip() if csv.strips(dtype) else value
        return text.split(CSV_LIST_SEPARATOR)
    return [value]


def field_values(
    name: str,
    dtype: str,
    shape: Sequence[int | None] | None,
    default: Sequence[Any] | None,
    value: Any,
    csv: CsvMissing | None = None,
) -> list[Any]:
    """The values one record gives a field, by the one rule every reader of records follows.

    ``shape`` is the field's shape per record (``None``: variable length; a ``None``
    dimension counts as 1); ``default`` its flat default values (``None``: required). A missing value (see
    :func:`is_missing`; ``csv`` is the rule for a CSV cell, ``None`` for typed values) takes
    the default, a variable-length field none; a CSV cell of a multi-valued field splits on
    ``|``; each value goes through :func:`coerce_value`.

    Raises:
        ValueError: naming the field and what was expected.

    Example:
        >>> field_values("w", "float32", (2,), None, "0.5|1", CsvMissing())
        [0.5, 1.0]
        >>> field_values("age", "int64", (), [30], "", CsvMissing())
        [30]
    """
    at = f"field {name!r}"
    missing = is_missing(value, dtype, csv)
    if shape is None:
        values = [] if missing else _split_values(value, dtype, csv)
    elif missing or (isinstance(value, (list, tuple)) and not value):
        if default is None:
            raise ValueError(f"{at}: missing, and the feature has no default")
        return list(default)
    else:
        values = _split_values(value, dtype, csv) if shape else [value]
    try:
        out = [coerce_value(dtype, v) for v in values]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{at}: expected {dtype}, found {value_text(value)} ({exc})") from None
    size = None if shape is None else math.prod(d or 1 for d in shape)
    if size is not None and len(out) != size:
        raise ValueError(f"{at}: expected {size} values (shape {list(shape or ())}), found {len(out)}")
    return out
