"""The guides' examples that need a model or tf.estimator run as shown: the train guide's
``TF_CONFIG`` line, and the serve guide's Python on the tests' penguins model."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .examples import DOCS, environment, run_console, runnable


@pytest.mark.estimator
def test_the_train_guide_runs_as_shown(tmp_path: Path) -> None:
    blocks = runnable(DOCS / "guides" / "train.md")
    assert [b.kind for b in blocks] == ["console"]
    for block in blocks:
        run_console(block, tmp_path)


@pytest.mark.slow
def test_the_serve_guide_python_serves_a_base_path(tiny_model: Any, tmp_path: Path) -> None:
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "m").symlink_to(tiny_model.export("best").parent)
    blocks = runnable(DOCS / "guides" / "serve.md")
    assert [b.kind for b in blocks] == ["python"]
    (tmp_path / "example.py").write_text(blocks[0].code)
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"127\.0\.0\.1:\d+\n", done.stdout), done.stdout
