"""Fixtures that need ``tf.estimator``, built on either lane.

The suite runs twice (``make test``): on the estimator lane (TensorFlow 2.15 with
tensorflow-estimator, ``.venv``) and on the run lane (the newest TensorFlow, ``.venv-run``), which
has no ``tf.estimator``. A fixture that trains an Estimator calls :func:`build` with a builder,
``"module:function"`` of a module under ``tests/`` (``"folder/module:function"`` for one in a
folder that is no package) that takes a directory and returns what it
built (paths, numbers) as JSON-able values. On the estimator lane the builder runs in this
process; on the run lane it runs once in the estimator lane's Python, named by
``TFSHIP_ESTIMATOR_PYTHON`` (the Makefile sets it), and this process reads its answer. Either way
the fixture gets the same JSON-able answer, and the exports are TensorFlow 2.15's, as a user's
years of Estimator exports are.

Tests that call ``tf.estimator`` themselves are marked ``estimator`` and run on the estimator
lane only (``pytest -m 'not estimator'`` on the run lane); ``tests/trainer`` and
``tests/exporters`` are marked whole by ``tests/conftest.py``.

Run as a script (by :func:`build_many` on the run lane):
``python estimator_lane.py BUILDER DIR [BUILDER DIR ...]``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
ANSWER = "built.json"
PYTHON_VARIABLE = "TFSHIP_ESTIMATOR_PYTHON"


def has_estimator() -> bool:
    """Whether this Python can train Estimators (tensorflow-estimator beside TensorFlow 2.15)."""
    if importlib.util.find_spec("tensorflow_estimator") is None:
        return False
    from importlib.metadata import version

    return version("tensorflow").startswith("2.15.")


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=os.fspath))


def _run(builder: str, directory: Path) -> Any:
    module_path, function = builder.split(":")
    folder, _, module_name = module_path.rpartition("/")
    for where in {TESTS, TESTS / folder}:
        if str(where) not in sys.path:
            sys.path.insert(0, str(where))
    return _jsonable(getattr(importlib.import_module(module_name), function)(directory))


def build(builder: str, directory: Path) -> Any:
    """What ``builder`` (``"module:function"``) built in ``directory``, on either lane."""
    return build_many([(builder, directory)])[0]


def build_many(jobs: list[tuple[str, Path]]) -> list[Any]:
    """What each builder built in its directory, on either lane; on the run lane all of them in
    one process of the estimator lane, which imports TensorFlow once."""
    for _, directory in jobs:
        directory.mkdir(parents=True, exist_ok=True)
    if has_estimator():
        return [_run(builder, directory) for builder, directory in jobs]
    python = os.environ.get(PYTHON_VARIABLE)
    if not python:
        raise RuntimeError(
            f"this fixture trains an Estimator, which this TensorFlow cannot: set {PYTHON_VARIABLE} "
            "to the Python of an environment with tfship[estimator] (make test sets it to .venv's)"
        )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    arguments = [str(part) for job in jobs for part in job]
    done = subprocess.run(
        [python, str(Path(__file__).resolve()), *arguments],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        names = ", ".join(builder for builder, _ in jobs)
        raise RuntimeError(f"building {names} with {python} failed:\n{done.stderr[-4000:]}")
    return [json.loads((directory / ANSWER).read_text()) for _, directory in jobs]


def main(argv: list[str]) -> int:
    """``python estimator_lane.py BUILDER DIR [BUILDER DIR ...]``: build each, and write its
    answer to ``DIR/built.json``."""
    for builder, directory in zip(argv[::2], argv[1::2]):
        answer = _run(builder, Path(directory))
        (Path(directory) / ANSWER).write_text(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
