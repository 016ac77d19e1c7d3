"""Session fixtures: one small real export of every kind the inspector reads, built once."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import inspect_exports  # noqa: E402

from estimator_lane import build_many  # noqa: E402


@pytest.fixture(scope="session")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """Export directory per model kind (see ``inspect_exports.BUILDERS``)."""
    root = tmp_path_factory.mktemp("inspect_exports")
    # the Estimators in one go (on the run lane, one process of the estimator lane), in folders
    # of their own: an answer file per builder
    names = sorted(inspect_exports.ESTIMATORS)
    built = build_many([(f"inspect/inspect_exports:{name}", root / name) for name in names])
    found = {name: pathlib.Path(path) for name, path in zip(names, built)}
    others = {name: builder(root) for name, builder in inspect_exports.BUILDERS.items() if name not in found}
    return {name: {**found, **others}[name] for name in inspect_exports.BUILDERS}
