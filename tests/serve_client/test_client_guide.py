"""Every example of the client guide (docs/guides/client.md) runs against the demo's model, as written.

The guide's commands (``$ tfship client ...``) run through the CLI and end as the guide
shows (0, or the error it prints); its Python blocks run as they are. Only the server address
and the files they read are put in place.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "client.md"


def client_section() -> str:
    return GUIDE.read_text()


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", client_section(), flags=re.S)


@pytest.fixture()
def files(tiny_model: Any, tmp_path: Path) -> dict[str, str]:
    """The files the guide's commands read: two records of the eval set and the schema."""
    with open(tiny_model.eval_csv, newline="") as handle:
        rows = [row for row, _ in zip(csv.DictReader(handle), range(2))]
    for row in rows:
        del row["species"]
    jsonl = tmp_path / "records.jsonl"
    jsonl.write_text("".join(json.dumps(_typed(row)) + "\n" for row in rows))
    table = tmp_path / "records.csv"
    with open(table, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    schema = str(tiny_model.schema_path)
    return {"records.jsonl": str(jsonl), "records.csv": str(table), "schema.json": schema}


def _typed(row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out


def commands() -> list[tuple[list[str], str | None]]:
    """Each ``$ tfship client`` line of the section and the error line it shows, if any."""
    found = []
    for block in blocks("console"):
        lines = block.splitlines()
        for index, line in enumerate(lines):
            if not line.startswith("$ tfship client "):
                continue
            following = lines[index + 1] if index + 1 < len(lines) else ""
            found.append((shlex.split(line[2:])[1:], following if following.startswith("Error:") else None))
    return found


def test_the_guide_has_client_examples() -> None:
    assert len(commands()) >= 5
    assert blocks("python")


@pytest.mark.parametrize("args, error", commands(), ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_each_guide_command_runs_as_shown(
    penguins: Any, files: dict[str, str], args: list[str], error: str | None
) -> None:
    args = [files.get(arg, arg) for arg in args]
    result = CliRunner().invoke(cli, [*args[:2], "-s", penguins.address, *args[2:]])
    if error is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2
    head = error.split(": Servable")[0]
    assert result.stderr.startswith(head), result.stderr


def test_each_guide_python_block_runs_as_written(penguins: Any) -> None:
    for block in blocks("python"):
        code = block.replace("127.0.0.1:8500", penguins.address)
        code = code.replace("http://127.0.0.1:8501", penguins.rest_url)
        exec(compile(code, "docs/guides/client.md", "exec"), {})
