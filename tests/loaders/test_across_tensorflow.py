"""Estimator exports written by TensorFlow 2.15, run by this lane's TensorFlow: the answers TF 2.15
gave when it wrote them.

``estimator_builds.cross_tf`` exports canned and custom Estimators through parsing and raw
receivers, and tfship's trainer with both, and records every signature's answer to fixed inputs
as TF 2.15's own session computed it. On the estimator lane this holds tfship to TensorFlow
itself; on the run lane (the newest TensorFlow, numpy 2) it is the promise that a team's years of
exports predict and serve the same after the upgrade. Floats agree within a few float32 ulps (the
newest TensorFlow's kernels may round the last bit differently), classes and ids exactly.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from estimator_lane import build
from tfship.loaders import load
from tfship.serve_client import ServingClient

pytestmark = pytest.mark.slow

EXPORTS = ["canned_parsing", "canned_raw", "regressor_parsing", "custom_parsing", "trainer_both"]
MAX_ULPS = 4


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    built = build("estimator_builds:cross_tf", tmp_path_factory.mktemp("cross_tf"))
    found: dict[str, Any] = json.loads(Path(built["answers"]).read_text())
    assert sorted(found) == sorted(EXPORTS)
    return found


def _array(tensor: dict[str, Any]) -> Any:
    if tensor["dtype"] == "bytes":
        values = [base64.b64decode(v) for v in tensor["b64"]]
        return np.array(values, dtype=object).reshape(tensor["shape"])
    return np.array(tensor["values"], dtype=tensor["dtype"]).reshape(tensor["shape"])


def _assert_same(got: Any, want: Any, where: str) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, f"{where}: shape {got.shape}, TF 2.15 gave {want.shape}"
    if want.dtype.kind == "f":
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, TF 2.15 gave {want.dtype}"
        np.testing.assert_array_max_ulp(got, want, maxulp=MAX_ULPS)
    else:
        assert got.tolist() == want.tolist(), where


def _feeds(signature: dict[str, Any]) -> dict[str, Any]:
    return {name: _array(tensor) for name, tensor in signature["inputs"].items()}


@pytest.mark.parametrize("export", EXPORTS)
def test_local_model_gives_the_answers_tensorflow_2_15_gave(answers: dict[str, Any], export: str) -> None:
    entry = answers[export]
    with load(entry["path"]) as model:
        assert model.loader == "session"  # as TF Serving runs them, on either TensorFlow
        for key, signature in entry["signatures"].items():
            got = model.run(_feeds(signature), signature=key)
            assert sorted(got) == sorted(signature["outputs"])
            for name, tensor in signature["outputs"].items():
                _assert_same(got[name], _array(tensor), f"{export} {key} {name}")


@pytest.fixture(scope="module")
def served(answers: dict[str, Any]) -> Iterator[Any]:
    from tfship.server import ModelConfig, ModelServer, ServerOptions

    models = [ModelConfig(name, str(Path(answers[name]["path"]).parent)) for name in EXPORTS]
    server = ModelServer(models, ServerOptions(port=0, rest_port=0))
    server.start()
    try:
        for name in EXPORTS:
            server.wait_until_available(name, timeout=60)
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_tfship_serve_gives_the_answers_tensorflow_2_15_gave(
    answers: dict[str, Any], served: Any, transport: str
) -> None:
    target = served.address if transport == "grpc" else served.rest_url
    compared = 0
    with ServingClient(target, timeout=30) as client:
        for export in EXPORTS:
            for key, signature in answers[export]["signatures"].items():
                want = {name: _array(tensor) for name, tensor in signature["outputs"].items()}
                where = f"{transport} {export} {key}"
                if signature["method"] == "tensorflow/serving/predict":
                    result = client.predict(export, _feeds(signature), signature=key)
                    for name in want:
                        _assert_same(result.as_numpy(name), want[name], f"{where} {name}")
                else:
                    (examples,) = _feeds(signature).values()
                    if signature["method"] == "tensorflow/serving/classify":
                        got = client.classify(export, list(examples), signature=key)
                        _assert_same(got.as_numpy("scores"), want["scores"], f"{where} scores")
                        if "classes" in want:
                            labels = [[c.decode() for c in row] for row in want["classes"].tolist()]
                            assert got.as_numpy("classes").tolist() == labels, where
                    else:
                        regressed = client.regress(export, list(examples), signature=key)
                        _assert_same(regressed.as_numpy(), want["outputs"].reshape(-1), f"{where} outputs")
                compared += 1
    assert compared == sum(len(answers[e]["signatures"]) for e in EXPORTS)
