"""Fixtures for the exporter tests: one tiny canned classifier trained once per session."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from export_helpers import input_fn, make_classifier


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
    import tensorflow as tf

    state = tf.train.get_checkpoint_state(classifier.model_dir)
    return {int(p.rsplit("-", 1)[-1]): p for p in state.all_model_checkpoint_paths}


@pytest.fixture()
def export_logs(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    """The tfship.exporters log lines emitted so far in the test."""
    caplog.set_level(logging.DEBUG, logger="tfship.exporters")  # the signature report is debug

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "tfship.exporters"]

    return lines


SCHEMA = {
    "version": 1,
    "label": {"name": "y", "kind": "binary"},
    "features": [
        {"name": "x", "dtype": "float32", "default": 0.0, "use": {"kind": "numeric"}},
        {
            "name": "color",
            "dtype": "string",
            "default": "",
            "use": {"kind": "categorical", "vocabulary": ["r", "g", "b"], "as": "indicator"},
        },
        {
            "name": "tags",
            "dtype": "string",
            "shape": None,
            "use": {"kind": "hash", "buckets": 8, "as": "embedding", "dimension": 2},
        },
    ],
}


@pytest.fixture(scope="session")
def trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A model dir trained by ``tfship.trainer`` (with ``trainer.json``), evaluated at 5 and 10."""
    from tfship.schema import Schema
    from tfship.trainer import ModelOptions, RunOptions, train

    root = tmp_path_factory.mktemp("trained")
    schema_path = root / "schema.json"
    schema_path.write_text(json.dumps(SCHEMA))
    rows = ["x,color,tags,y"] + [
        f"{v:.3f},{'rgb'[i % 3]},{'a' if v > 0 else 'b'},{int(v > 0)}"
        for i, v in enumerate(np.random.default_rng(0).normal(size=48))
    ]
    data_path = root / "data.csv"
    data_path.write_text("\n".join(rows) + "\n")
    run = RunOptions(max_steps=10, checkpoint_every=5, log_every=5, exports=())
    train(
        Schema.load(schema_path),
        root / "model",
        [str(data_path)],
        [str(data_path)],
        model=ModelOptions(kind="linear"),
        run=run,
    )
    return root
