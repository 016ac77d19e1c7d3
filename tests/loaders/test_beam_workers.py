"""`tfship predict --runner beam` on several worker processes: one model load per process, every
row accounted for, the input order kept, the same numbers as the local runner."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import apache_beam  # noqa: F401  (make test installs Beam on both lanes: one missing fails here)
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow


def _inputs(tiny_model: Any, folder: Path) -> list[str]:
    # keep_default_na=False: "NA" stays the text the files hold (a category of sex, a missing number)
    parts = (tiny_model.train_csv, tiny_model.eval_csv)
    rows = pd.concat([pd.read_csv(p, keep_default_na=False) for p in parts])
    rows.insert(0, "row_id", range(len(rows)))
    rows["bill_length_mm"] = rows["bill_length_mm"].astype(object)
    rows.iloc[100, rows.columns.get_loc("bill_length_mm")] = "not a number"
    paths = []
    for n, start in enumerate(range(0, len(rows), 115)):
        part = rows.iloc[start : start + 115]
        path = folder / f"part-{n}.csv"
        part.to_csv(path, index=False)
        paths.append(str(path))
    return paths


def test_beam_workers_load_once_and_keep_every_row(tiny_model: Any, tmp_path: Path) -> None:
    files = _inputs(tiny_model, tmp_path)
    common = [
        str(tiny_model.export("final")),
        *files,
        "--keep-columns",
        "row_id",
        "--batch-size",
        "8",
        "--json",
    ]
    beam_out, local_out = tmp_path / "beam.csv", tmp_path / "local.csv"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfship",
            "predict",
            *common,
            "-o",
            str(beam_out),
            "--rejects",
            str(tmp_path / "rejects.jsonl"),
            "--runner",
            "beam",
            "--beam-option",
            "direct_running_mode=multi_processing",
            "--beam-option",
            "direct_num_workers=2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    total = 344
    assert summary["rows_in"] == total and summary["rejected"] == 1
    assert summary["predicted"] + summary["rejected"] == summary["rows_in"]
    loads = re.search(r"the model was loaded (\d+) time\(s\)", done.stderr)
    assert loads is not None, done.stderr[-2000:]
    # 43 batches of at most 8 rows over 2 worker processes: one load per process, not per batch.
    assert 1 <= int(loads.group(1)) <= 2
    rejects = [json.loads(line) for line in (tmp_path / "rejects.jsonl").read_text().splitlines()]
    assert [(Path(r["file"]).name, r["line"]) for r in rejects] == [("part-0.csv", 102)]  # header is line 1
    beam = pd.read_csv(beam_out)
    assert beam["row_id"].tolist() == [i for i in range(total) if i != 100]  # input order
    local = CliRunner().invoke(cli, ["predict", *common, "-o", str(local_out)])
    assert local.exit_code == 0, local.output
    expected = pd.read_csv(local_out)
    assert list(beam.columns) == list(expected.columns)
    assert list(beam.columns) == ["row_id", "class", "probability"]
    assert beam["class"].tolist() == expected["class"].tolist()
    np.testing.assert_allclose(beam["probability"], expected["probability"], rtol=1e-5, atol=1e-6)
