"""The README's minute's tour runs as written: its shell commands from an empty directory, then
its Python in the directory they left, printing what its comments say."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .examples import ROOT, Block, environment, run_console, runnable

pytestmark = [pytest.mark.slow]

README = ROOT / "README.md"


def _tour() -> tuple[Block, Block]:
    (shell,) = runnable(README, "console")
    (python,) = runnable(README, "python")
    return shell, python


def _printed_comments(code: str) -> list[str]:
    """What the block says each print shows: the comment after every ``print(...)``."""
    return [m.group(1) for m in re.finditer(r"print\(.*\)\s+# (.+)$", code, re.M)]


def _run_python(block: Block, cwd: Path) -> list[str]:
    ast.parse(block.code)
    (cwd / "tour.py").write_text(block.code)
    done = subprocess.run(
        [sys.executable, "tour.py"], cwd=cwd, env=environment(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_readme_tour_is_one_shell_and_one_python_block() -> None:
    shell, python = _tour()
    assert shell.code.startswith("$ tfship data penguins")
    assert len(_printed_comments(python.code)) == 2


@pytest.mark.estimator
def test_the_shell_tour_runs_as_shown_and_the_python_tour_prints_its_comments(tmp_path: Path) -> None:
    shell, python = _tour()
    run_console(shell, tmp_path)
    printed = _run_python(python, tmp_path)
    shown = _printed_comments(python.code)
    assert len(printed) == len(shown)
    # the comment shows the start of a dict's repr (then ...), or the whole of a word
    first, second = shown
    assert printed[0].startswith(first.split("...")[0].rstrip(", ")), (printed[0], first)
    assert printed[1] == second


def test_the_python_tour_runs_on_this_lane(tiny_model: Any, tmp_path: Path) -> None:
    # the tiny model of the tests stands where the shell tour leaves its exports
    (tmp_path / "model" / "export").mkdir(parents=True)
    (tmp_path / "model" / "export" / "best").symlink_to(tiny_model.export("best").parent)
    _, python = _tour()
    local, served = _run_python(python, tmp_path)
    classes = tiny_model.schema.label.vocabulary
    assert served in classes
    # the model run here and the one served answer alike
    assert local == f"{{'classes': array([[{served.encode()!r}]], dtype=object)}}"
