"""The predict guide's local runs, as shown, on the tests' penguins model: the files it names are
made here (``data/more.csv`` with one bad row at line 2002, ``data/eval_renamed.csv`` with a
column renamed), the model stands at ``export/dnn``, and the numbers of a run (timings,
probabilities) may differ from the page's."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import pytest

from .examples import DOCS, run_console, runnable

pytestmark = [pytest.mark.slow]

BAD_ROW = "Dream,abc,17.1,190,3700,female,2008,Adelie"


def _more(train_csv: Path, out: Path) -> None:
    """2,002 rows of the training set, species last, the one at line 2002 with a word for its
    bill length."""
    with open(train_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    names = ["island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "sex", "year"]
    names.append("species")
    lines = [",".join(names)] + [",".join(rows[i % len(rows)][n] for n in names) for i in range(2002)]
    lines[2001] = BAD_ROW
    out.write_text("\n".join(lines) + "\n")


def _renamed(eval_csv: Path, out: Path) -> None:
    """The evaluation set with the species first and bill_length_mm spelled Bill_length_mm."""
    with open(eval_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    names = [
        "species",
        "island",
        "bill_length_mm",
        "bill_depth_mm",
        "flipper_length_mm",
        "body_mass_g",
        "sex",
        "year",
    ]
    with open(out, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Bill_length_mm" if n == "bill_length_mm" else n for n in names])
        writer.writerows([row[n] for n in names] for row in rows)


def test_the_predict_guide_runs_as_shown(tiny_model: Any, tmp_path: Path) -> None:
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "dnn").symlink_to(tiny_model.export("best").parent)
    (tmp_path / "data").mkdir()
    shutil.copy(tiny_model.eval_csv, tmp_path / "data" / "eval.csv")
    _more(tiny_model.train_csv, tmp_path / "data" / "more.csv")
    blocks = runnable(DOCS / "guides" / "predict.md")
    assert len(blocks) == 4 and all(b.kind == "console" and b.numbers_vary for b in blocks)
    for block in blocks[:3]:
        run_console(block, tmp_path)
    _renamed(tiny_model.eval_csv, tmp_path / "data" / "eval_renamed.csv")
    run_console(blocks[3], tmp_path)


def test_the_predict_pipeline_page_runs_as_shown(tiny_model: Any, tmp_path: Path) -> None:
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "dnn").symlink_to(tiny_model.export("best").parent)
    (tmp_path / "data").mkdir()
    shutil.copy(tiny_model.eval_csv, tmp_path / "data" / "eval.csv")
    # the benchmark's own command is illustrative (a million rows); the summary's runs here
    [block] = runnable(DOCS / "guides" / "predict-pipeline.md")
    assert block.kind == "console" and block.numbers_vary
    run_console(block, tmp_path)
