"""The demo step prints the real facts of an export; the benchmark's comparison can fail."""

from __future__ import annotations

import pathlib
import shutil

from tfship.inspect._demo import run_demo_step


def test_demo_step(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    export = tmp_path / "best" / "42"
    shutil.copytree(exports["linear_parsing"], export)
    lines: list[str] = []
    run_demo_step(export, lines.append)
    text = "\n".join(lines)
    assert "serves version 42" in text
    assert "Method name is: tensorflow/serving/classify" in text
    assert "  age: fixed float32 [1] (required)" in text
    assert "  color: var string [None] (optional)" in text
    assert "ready to serve: 0 errors" in text
