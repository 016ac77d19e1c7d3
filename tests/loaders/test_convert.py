"""The Arrow fast path of CSV conversion agrees with the value-by-value path, cell for cell."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tfship.loaders._convert import Converted, _from_python, _text_arrow
from tfship.loaders._predict import Field, SparseColumn
from tfship.schema import CsvMissing

FIELDS = [
    Field("f", "float32", ()),
    Field("f_default", "float32", (), default=np.asarray(1.5, np.float32)),
    Field("i", "int64", ()),
    Field("s", "string", (), default=np.asarray("z", dtype=object)),
    Field("pair", "float32", (2,)),
    Field("tags", "string", None, sparse=True),
    Field("ids", "int64", None, sparse=True),
]

_atoms = st.sampled_from(
    ["1", "-2", "3.0", "3.5", "1e3", " 4 ", "x", "", "  ", "NA", "None", "null", "nan", "7|8", "9|", "a|b|c"]
)
RULES = [CsvMissing(), CsvMissing(strings=True), CsvMissing(na_values=("x", "-"))]
cells = st.lists(st.one_of(_atoms, st.text("0123456789.-| ae", max_size=6)), min_size=1, max_size=12)


def _both(
    fld: Field, values: list[str], rule: CsvMissing
) -> tuple[Converted, Any, Converted, Any]:
    fast, slow = Converted({}), Converted({})
    try:
        fast_col = _text_arrow(fld, pa.array(values, pa.string()), fast, rule)
    except (pa.ArrowInvalid, ValueError):
        fast_col = _from_python(fld, list(values), fast, rule)  # what _from_arrow does
    slow_col = _from_python(fld, list(values), slow, rule)
    return fast, fast_col, slow, slow_col


@settings(max_examples=300, deadline=None)
@given(values=cells, which=st.integers(0, len(FIELDS) - 1), rule=st.sampled_from(RULES))
def test_fast_and_slow_conversion_agree(values: list[str], which: int, rule: CsvMissing) -> None:
    fld = FIELDS[which]
    fast, fast_col, slow, slow_col = _both(fld, values, rule)
    assert sorted(fast.bad) == sorted(slow.bad)
    good = np.array([i not in slow.bad for i in range(len(values))])
    if isinstance(slow_col, SparseColumn):
        assert isinstance(fast_col, SparseColumn)
        np.testing.assert_array_equal(fast_col.indices, slow_col.indices)
        assert fast_col.values.tolist() == slow_col.values.tolist()
        np.testing.assert_array_equal(fast_col.dense_shape, slow_col.dense_shape)
    else:
        assert fast_col.dtype == slow_col.dtype
        np.testing.assert_array_equal(fast_col[good], slow_col[good])  # NaN equals NaN here


def test_reasons_name_the_field_and_what_was_found() -> None:
    out = Converted({})
    _from_python(FIELDS[2], ["3.5", "", "4"], out, CsvMissing())
    assert out.bad[0].startswith("field 'i': expected int64, found '3.5'")
    assert out.bad[1] == "field 'i': missing, and the feature has no default"
    assert 2 not in out.bad
