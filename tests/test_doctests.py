"""Every docstring example in tfship runs and shows what it says it shows.

Each module is imported by name and its ``>>>`` examples are found with ``doctest``'s own
finder and run with ELLIPSIS and NORMALIZE_WHITESPACE; a failure names the module, the object
and the line of each example that went wrong. Modules that import an optional dependency at
their top (Beam, TensorFlow, pyspark) need the full install, as ``make test`` has.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import tfship
from tfship.cli import NEEDS_ESTIMATOR

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# The examples that run (skipped ones not counted) when this was written; a finder that finds
# nothing, or a module that stops being walked, fails the floor.
EXPECTED_EXAMPLES = 598
MARGIN = 10


def _module_names() -> list[str]:
    walked = pkgutil.walk_packages(tfship.__path__, "tfship.")
    return ["tfship"] + sorted(info.name for info in walked)


MODULES = _module_names()
# Their examples train or export Estimators, and the verbs that need tf.estimator import them:
# the estimator lane only (tests/estimator_lane.py).
ESTIMATOR_PACKAGES = (
    "tfship.trainer",
    "tfship.exporters",
    *(f"tfship.cli.{verb}" for verb in sorted(NEEDS_ESTIMATOR)),
)


def _param(name: str) -> Any:
    needs = any(name == p or name.startswith(p + ".") for p in ESTIMATOR_PACKAGES)
    return pytest.param(name, id=name, marks=[pytest.mark.estimator] if needs else [])


class _Finder(doctest.DocTestFinder):
    """doctest's finder, which also finds a class renamed to its package for users' sake.

    ``tfship.exporters`` gives its exporters ``__module__ = "tfship.exporters"`` (reprs and
    messages name them there) while their code lives in a private module; doctest decides
    by ``__module__`` and would find them nowhere. Here a class belongs to the module whose
    globals its methods use.
    """

    def _from_module(self, module: Any, obj: Any) -> bool:
        if inspect.isclass(obj) and module is not None:
            methods = [v for v in vars(obj).values() if inspect.isfunction(v)]
            if methods:
                return any(method.__globals__ is vars(module) for method in methods)
        return bool(super()._from_module(module, obj))  # type: ignore[misc]


def _examples(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    found = _Finder().find(module, name)
    return sorted((test for test in found if test.examples), key=lambda test: test.name)


def _runs(example: doctest.Example) -> bool:
    return not example.options.get(doctest.SKIP, False)


class _Recorder(doctest.DocTestRunner):
    """Keeps one line per failed example: where it is, what it ran, what went wrong."""

    def __init__(self) -> None:
        super().__init__(optionflags=FLAGS, verbose=False)
        self.problems: list[str] = []

    def _where(self, test: doctest.DocTest, example: doctest.Example) -> str:
        line = (test.lineno or 0) + example.lineno + 1
        return f"{test.name} line {line}: >>> {example.source.strip()}"

    def report_failure(self, out: object, test: doctest.DocTest, example: doctest.Example, got: str) -> None:
        self.problems.append(
            f"{self._where(test, example)}\n  expected: {example.want.strip()!r}\n  got:      {got.strip()!r}"
        )

    def report_unexpected_exception(
        self, out: object, test: doctest.DocTest, example: doctest.Example, exc_info: object
    ) -> None:
        error = exc_info[1]  # type: ignore[index]
        self.problems.append(f"{self._where(test, example)}\n  raised: {type(error).__name__}: {error}")


# matplotlib (the promotion report's plots) still calls pyparsing's old spellings
@pytest.mark.filterwarnings("ignore::pyparsing.warnings.PyparsingDeprecationWarning")
@pytest.mark.parametrize("name", [_param(name) for name in MODULES])
def test_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _Recorder()
    for number, test in enumerate(_examples(name)):
        # each docstring's files (an export it saves, a file it writes) in a directory of its
        # own, never in the checkout
        (tmp_path / str(number)).mkdir()
        monkeypatch.chdir(tmp_path / str(number))
        runner.run(test, out=lambda text: None, clear_globs=True)
    if runner.problems:
        pytest.fail("\n".join(runner.problems), pytrace=False)


@pytest.mark.estimator  # it imports every module
def test_examples_are_found() -> None:
    counts = {name: sum(sum(map(_runs, test.examples)) for test in _examples(name)) for name in MODULES}
    total = sum(counts.values())
    assert total >= EXPECTED_EXAMPLES - MARGIN, f"only {total} docstring examples found: {counts}"


@pytest.mark.estimator  # it imports every module
def test_every_example_in_the_source_is_found() -> None:
    # a docstring the finder cannot reach (an object renamed to another module, a lazy
    # package) would hold examples that never run: count ">>>" lines file by file
    found: dict[str, int] = {}
    for name in MODULES:
        for test in _examples(name):
            assert test.filename is not None
            found[test.filename] = found.get(test.filename, 0) + len(test.examples)
    root = Path(tfship.__file__).parent
    written = {}
    for path in sorted(root.rglob("*.py")):
        count = sum(line.lstrip().startswith(">>>") for line in path.read_text().splitlines())
        if count:
            written[str(path)] = count
    assert found == written


def test_a_wrong_example_fails() -> None:
    # the recorder can fail: an example whose output is wrong is reported with its line
    parser = doctest.DocTestParser()
    test = parser.get_doctest(">>> 1 + 1\n3\n", {}, "probe", os.devnull, 0)
    runner = _Recorder()
    runner.run(test, out=lambda text: None)
    assert runner.problems == ["probe line 1: >>> 1 + 1\n  expected: '3'\n  got:      '2'"]
