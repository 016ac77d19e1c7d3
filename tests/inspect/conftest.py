"""Session fixtures: one small real export of every kind the inspector reads, built once."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import inspect_exports  # noqa: E402

from estimator_lane import build  # noqa: E402


@pytest.fixture(scope="session")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """Export directory per model kind (see ``inspect_exports.BUILDERS``)."""
    root = tmp_path_factory.mktemp("inspect_exports")
    return {
        name: pathlib.Path(build(f"inspect/inspect_exports:{name}", root))
        if name in inspect_exports.ESTIMATORS
        else builder(root)
        for name, builder in inspect_exports.BUILDERS.items()
    }
