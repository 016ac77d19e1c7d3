"""A record promote cannot use is named by its file and the line it is on, as the reader
counts lines: blank lines and a CSV's header included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfship.errors import InputError
from tfship.promote import PromoteOptions, promote

from .conftest import base_with

pytestmark = pytest.mark.slow


def test_a_bad_request_after_a_blank_line_is_named_by_its_line(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    records = tmp_path / "records.jsonl"
    records.write_text('{"x": [1, 2, 3, 4]}\n\n{"x": [0, "one", 0, 1]}\n')
    options = PromoteOptions(requests=records, latency_calls=5, max_latency_ratio=100.0, dry_run=True)
    with pytest.raises(InputError, match="^" + re.escape(f"{records}:3: ")):
        promote(modules["same"], base, options)


def test_an_eval_row_without_its_label_is_named_by_its_csv_line(modules, tmp_path: Path) -> None:
    base = base_with(tmp_path, modules["baseline"])
    rows = tmp_path / "eval.csv"
    # header on line 1, rows on lines 2 and 4 (a blank line between): the second has no label
    rows.write_text("x,label\n1|2|3|4,0\n\n0|1|0|1,\n")
    options = PromoteOptions(
        eval_file=rows, label="label", latency_calls=5, max_latency_ratio=100.0, dry_run=True
    )
    with pytest.raises(InputError, match="^" + re.escape(f"{rows}:4: no label 'label'")):
        promote(modules["same"], base, options)
