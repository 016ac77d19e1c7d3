"""What the server asks of the loader: a SavedModel parsed once, and feeds checked once.

The server's manager parses a version's ``saved_model.pb`` (with TF Serving's errors) and hands
the parse to ``tfship.loaders.load``, which keeps it instead of reading the file again; the
serving core checks a request in TF Serving's words and runs it with ``run_checked`` of the
loaders' door to the server, which checks nothing again, while ``LocalModel.run`` still does.
The public ``LocalModel`` keeps the old method's name only as a deprecated spelling.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tfship.errors import ModelInputError
from tfship.inspect import read_saved_model
from tfship.loaders import load
from tfship.loaders._shared import run_checked


def test_load_keeps_the_saved_model_its_caller_parsed(module_base: Path) -> None:
    parsed = read_saved_model(module_base / "1")
    with load(module_base / "1", saved_model=parsed) as given, load(module_base / "1") as read:
        # the very objects parsed: the file was not parsed a second time
        assert given.meta_graph is parsed.meta_graph(("serve",))
        assert given.meta_graph.proto is parsed.proto.meta_graphs[0]
        assert read.meta_graph is not given.meta_graph
        x = np.array([[1.0, 2.0]], np.float32)
        assert given.run({"x": x})["y"].tolist() == read.run({"x": x})["y"].tolist()


def test_run_checked_answers_as_run_and_run_still_checks(module_base: Path) -> None:
    with load(module_base / "2") as model:
        x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
        keys = sorted(model.signature().outputs)
        checked = run_checked(model, {"x": x}, "serving_default", keys)
        assert sorted(checked) == keys
        for key, value in model.run({"x": x}).items():
            assert np.array_equal(checked[key], value)
        assert checked["y"].tolist() == [[7.0], [13.0]]  # x @ [[1], [2]] + 2
        with pytest.raises(ModelInputError, match="float64"):
            model.run({"x": x.astype(np.float64)})  # the user's call checks dtypes
        with pytest.raises(ModelInputError, match="no output 'nope'"):
            run_checked(model, {"x": x}, "serving_default", ["nope"])  # run's words for the rest


def test_the_server_only_methods_warn_on_the_public_model(module_base: Path) -> None:
    with load(module_base / "2") as model:
        x = np.array([[1.0, 2.0]], np.float32)
        with pytest.warns(
            DeprecationWarning, match=r"^LocalModel\.run_checked is deprecated: .* use LocalModel\.run$"
        ):
            assert model.run_checked({"x": x}, "serving_default", ["y"])["y"].tolist() == [[7.0]]
        with pytest.warns(DeprecationWarning, match=r"^LocalModel\.checked_runner is deprecated"):
            runner = model.checked_runner("serving_default", ["y"])
        assert runner is not None and runner({"x": x})[0].tolist() == [[7.0]]
