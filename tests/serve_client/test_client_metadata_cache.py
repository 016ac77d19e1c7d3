"""Validation fetches a model's signatures once, and is best effort on servers without metadata."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from tensorflow_serving.apis import get_model_metadata_pb2, get_model_status_pb2

import tfship.serve_client as errors
from tfship.cli import cli
from tfship.serve_client import ServingClient

from .conftest import ScriptedServer


def _metadata_answer(request: bytes, context: Any) -> bytes:
    req = get_model_metadata_pb2.GetModelMetadataRequest.FromString(request)
    sig_map = get_model_metadata_pb2.SignatureDefMap()
    sig = sig_map.signature_def["serving_default"]
    sig.method_name = "tensorflow/serving/predict"
    x = sig.inputs["x"]
    x.name, x.dtype = "x:0", 1
    x.tensor_shape.dim.add(size=-1)
    sig.outputs["x"].CopyFrom(x)
    resp = get_model_metadata_pb2.GetModelMetadataResponse()
    resp.model_spec.name = req.model_spec.name
    resp.model_spec.version.value = 1
    resp.metadata["signature_def"].Pack(sig_map)
    data: bytes = resp.SerializeToString()
    return data


def _status_answer(request: bytes, context: Any) -> bytes:
    resp = get_model_status_pb2.GetModelStatusResponse()
    entry = resp.model_version_status.add()
    entry.version, entry.state = 4, 30
    data: bytes = resp.SerializeToString()
    return data


def _methods(server: ScriptedServer) -> list[str]:
    return [method for method, _, _ in server.calls]


def test_signatures_are_fetched_once(scripted: ScriptedServer) -> None:
    scripted.handlers["GetModelMetadata"] = _metadata_answer
    with ServingClient(scripted.address) as client:
        for _ in range(3):
            client.predict("m", {"x": [1.0, 2.0]})
        with pytest.raises(errors.InvalidInputError, match=r"expects x: float32 \[\?\]"):
            client.predict("m", {"y": [1.0]})
    # The refusal by the cached signature is checked once more against a fresh one.
    assert _methods(scripted) == ["GetModelMetadata", "Predict", "Predict", "Predict", "GetModelMetadata"]


def test_rejected_call_refetches_signatures(scripted: ScriptedServer) -> None:
    scripted.handlers["GetModelMetadata"] = _metadata_answer
    with ServingClient(scripted.address) as client:
        client.predict("m", {"x": [1.0]})
        scripted.failures = [(grpc.StatusCode.INVALID_ARGUMENT, "signature changed")]
        with pytest.raises(errors.InvalidInputError):
            client.predict("m", {"x": [1.0]})
        client.predict("m", {"x": [1.0]})
    assert _methods(scripted).count("GetModelMetadata") == 2


def test_async_rejected_call_refetches_signatures(scripted: ScriptedServer) -> None:
    import asyncio

    from tfship.serve_client import AsyncServingClient

    async def calls() -> None:
        async with AsyncServingClient(scripted.address) as client:
            await client.predict("m", {"x": [1.0]})
            scripted.failures = [(grpc.StatusCode.INVALID_ARGUMENT, "signature changed")]
            with pytest.raises(errors.InvalidInputError):
                await client.predict("m", {"x": [1.0]})
            await client.predict("m", {"x": [1.0]})

    scripted.handlers["GetModelMetadata"] = _metadata_answer
    asyncio.run(calls())
    assert _methods(scripted).count("GetModelMetadata") == 2


def test_server_without_metadata_still_answers(scripted: ScriptedServer) -> None:
    with ServingClient(scripted.address) as client:  # GetModelMetadata is UNIMPLEMENTED here
        assert client.predict("m", {"anything": [[1.0]]}).as_numpy("anything").shape == (1, 1)


def test_cli_sends_headers(scripted: ScriptedServer) -> None:
    scripted.handlers["GetModelStatus"] = _status_answer
    args = ["client", "status", "-s", scripted.address, "-m", "m", "-H", "x-api-key=s3cret"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "version 4" in result.output
    assert scripted.calls[0][2]["x-api-key"] == "s3cret"
    bad = CliRunner().invoke(cli, [*args[:-1], "novalue"])
    assert bad.exit_code == 2 and "expected KEY=VALUE" in bad.output


def test_cached_signatures_do_not_outlive_their_version(scripted: ScriptedServer) -> None:
    def version_3(request: bytes, context: Any) -> bytes:
        resp = get_model_metadata_pb2.GetModelMetadataResponse.FromString(_metadata_answer(request, context))
        resp.model_spec.version.value = 3
        data: bytes = resp.SerializeToString()
        return data

    # The signatures come from version 3; Predict answers name version 1 (a roll back, or a
    # label moved): the next call fetches the signatures again.
    scripted.handlers["GetModelMetadata"] = version_3
    with ServingClient(scripted.address) as client:
        for _ in range(2):
            assert client.predict("m", {"x": [1.0]}).model_spec.version == 1
    assert _methods(scripted) == ["GetModelMetadata", "Predict", "GetModelMetadata", "Predict"]
