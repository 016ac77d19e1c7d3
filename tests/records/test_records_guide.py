"""The `tfship.records` guide's example (docs/guides/records.md) runs as written, on the penguins."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

from tfship.data import infer_schema, penguins_split

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "records.md"


def _example() -> str:
    (block,) = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    return block


def test_the_guide_example_reads_and_types_the_rows(tmp_path: Path) -> None:
    _, eval_csv = penguins_split(tmp_path / "data")
    infer_schema(eval_csv, label="species").save(tmp_path / "schema.json")
    with open(eval_csv, newline="") as source, open(tmp_path / "new_rows.csv", "w", newline="") as out:
        rows = list(csv.DictReader(source))
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (tmp_path / "example.py").write_text(_example())
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.split("\n", 1)
    assert first == f"{len(rows)} examples; float_list"
    assert 'bytes_list {\n  value: "Biscoe"\n}' in second


def test_the_guide_example_names_a_bad_cell(tmp_path: Path) -> None:
    _, eval_csv = penguins_split(tmp_path / "data")
    infer_schema(eval_csv, label="species").save(tmp_path / "schema.json")
    lines = eval_csv.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index("bill_length_mm")] = "long"
    (tmp_path / "new_rows.csv").write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    (tmp_path / "example.py").write_text(_example())
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode != 0
    assert re.search(r"new_rows\.csv:2: field 'bill_length_mm': expected float32, found 'long'", done.stderr)
