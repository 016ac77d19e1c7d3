"""Session-wide fixtures shared by every test package."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from estimator_lane import build, has_estimator

_PROXY_VARS = ("grpc_proxy", "https_proxy", "http_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # gRPC and urllib honour proxy variables; loopback tests must never go through one.
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Whole directories that train or export with tf.estimator: the estimator lane only.
_ESTIMATOR_DIRECTORIES = ("trainer", "exporters")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Their modules import the trainer or the Estimator at the top: not even collectable where
    # TensorFlow has no tf.estimator (the run lane), where they would all be deselected anyway.
    tests = Path(__file__).parent
    if collection_path.parent == tests and collection_path.name in _ESTIMATOR_DIRECTORIES:
        return not has_estimator()
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        parts = item.path.relative_to(tests).parts
        if parts and parts[0] in _ESTIMATOR_DIRECTORIES:
            item.add_marker(pytest.mark.estimator)


@dataclass(frozen=True)
class TrainResult:
    """What the tests read of ``tfship.trainer.train``'s result: the exports per exporter, the
    last step and the final evaluation."""

    exports: dict[str, list[str]]
    global_step: int
    metrics: dict[str, float]


@dataclass(frozen=True)
class TinyModel:
    """One small model trained per test session on the penguins, with its exports."""

    workdir: Path
    schema_path: Path
    train_csv: Path
    eval_csv: Path
    model_dir: Path
    result: TrainResult

    @property
    def schema(self) -> Any:
        from tfship.schema import Schema

        return Schema.load(self.schema_path)

    def export(self, kind: str = "best") -> Path:
        """The newest version directory of one exporter (best, latest or final)."""
        return Path(self.result.exports[kind][-1])


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    """A dnn trained for a few steps on the penguins with best, latest and final exports, by
    TensorFlow 2.15 on either lane (``estimator_builds.tiny_model``)."""
    workdir = tmp_path_factory.mktemp("tiny_model")
    built = build("estimator_builds:tiny_model", workdir)
    schema_path, train_csv, eval_csv, model_dir = (
        Path(built[key]) for key in ("schema_path", "train_csv", "eval_csv", "model_dir")
    )
    result = TrainResult(built["exports"], built["global_step"], built["metrics"])
    return TinyModel(workdir, schema_path, train_csv, eval_csv, model_dir, result)


@pytest.fixture(scope="module")
def penguins(tiny_model: TinyModel) -> Iterator[Any]:
    """``tfship serve`` (in process) serving the tiny model's best export as ``penguins``."""
    from tfship.server import ModelServer, ServerOptions

    base = tiny_model.export("best").parent
    server = ModelServer.from_base_path(base, "penguins", options=ServerOptions(port=0, rest_port=0))
    server.start()
    try:
        server.wait_until_available("penguins", timeout=60)
        yield server
    finally:
        server.stop()
