"""Fixtures for the exporter tests: one tiny canned classifier trained once per session."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from export_helpers import input_fn, make_classifier

from tfship._tf import tf


@pytest.fixture(scope="session")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A DNNClassifier trained for 10 steps, with checkpoints at steps 5 and 10."""
    model_dir = tmp_path_factory.mktemp("classifier")
    est = make_classifier(model_dir)
    est.train(input_fn, max_steps=10)
    return est


@pytest.fixture(scope="session")
def checkpoints(classifier: Any) -> dict[int, str]:
    """Global step -> checkpoint path of the session classifier."""
    state = tf().train.get_checkpoint_state(classifier.model_dir)
    return {int(p.rsplit("-", 1)[-1]): p for p in state.all_model_checkpoint_paths}


@pytest.fixture()
def export_logs(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    """The tfship.exporters log lines emitted so far in the test."""
    caplog.set_level(logging.INFO, logger="tfship.exporters")

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "tfship.exporters"]

    return lines
