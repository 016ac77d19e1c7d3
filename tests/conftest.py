"""Session-wide fixtures shared by every test package."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

_PROXY_VARS = ("grpc_proxy", "https_proxy", "http_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # gRPC and urllib honour proxy variables; loopback tests must never go through one.
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@dataclass(frozen=True)
class TinyModel:
    """One small model trained per test session on the penguins, with its exports."""

    workdir: Path
    schema_path: Path
    train_csv: Path
    eval_csv: Path
    model_dir: Path
    result: Any

    @property
    def schema(self) -> Any:
        from tfship.schema import Schema

        return Schema.load(self.schema_path)

    def export(self, kind: str = "best") -> Path:
        """The newest version directory of one exporter (best, latest or final)."""
        return Path(self.result.exports[kind][-1])


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    """A dnn trained for a few steps on the penguins with best, latest and final exports."""
    from tfship.data import infer_schema, penguins_split
    from tfship.trainer import ModelOptions, RunOptions, train

    workdir = tmp_path_factory.mktemp("tiny_model")
    train_csv, eval_csv = penguins_split(workdir / "data")
    schema = infer_schema(train_csv, "species")
    schema_path = workdir / "schema.json"
    schema.save(schema_path)
    result = train(
        schema,
        workdir / "model",
        [str(train_csv)],
        [str(eval_csv)],
        model=ModelOptions("dnn", hidden_units=(8,)),
        run=RunOptions(max_steps=60, checkpoint_every=30, log_every=30),
    )
    return TinyModel(workdir, schema_path, train_csv, eval_csv, workdir / "model", result)


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
