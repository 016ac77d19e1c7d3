"""A client kept open while the server's versions change under it.

Version 7 of the model takes ``x`` (float32 [?, 4]); version 8 takes ``inputs`` (strings).
Clients made before version 8 exists must serve the new signature once it loads, and the old
one again after a roll back, without being restarted.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfship.serve_client import (
    AsyncServingClient,
    InvalidInputError,
    RestServingClient,
    ServingClient,
)

X = np.ones((2, 4), np.float32)
TEXT = ["a", "bbb"]


def export_version(tf: Any, base: Path, version: int) -> None:
    """Version 7: ``y = sum(x)`` over x [?, 4]; version 8: ``y = length(inputs)``. Written
    aside and renamed into place, as an exporter publishes."""

    class Numbers(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            return {"y": tf.reduce_sum(x, axis=1)}

    class Texts(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def serve(self, inputs: Any) -> dict[str, Any]:
            return {"y": tf.cast(tf.strings.length(inputs), tf.float32)}

    module = Numbers() if version == 7 else Texts()
    staging = base.parent / f"staging-{version}"
    tf.saved_model.save(module, str(staging), signatures={"serving_default": module.serve})
    staging.rename(base / str(version))


def wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture()
def changing(tf: Any, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    from tfship.server import ModelServer, ServerOptions

    base = tmp_path / "m"
    base.mkdir()
    export_version(tf, base, 7)
    server = ModelServer.from_base_path(
        base, "m", options=ServerOptions(port=0, rest_port=0, poll_seconds=0.1)
    )
    server.start()
    try:
        server.wait_until_available("m", 7, timeout=60)
        yield server, base
    finally:
        server.stop()


def _serving(client: ServingClient, version: int) -> bool:
    return [s.version for s in client.status("m") if s.available] == [version]


def test_a_long_lived_client_follows_a_new_signature_and_a_roll_back(
    tf: Any, changing: tuple[Any, Path]
) -> None:
    server, base = changing

    async def make_async() -> AsyncServingClient:
        return AsyncServingClient(server.address, timeout=20)

    loop = asyncio.new_event_loop()
    with (
        ServingClient(server.address, timeout=20) as grpc_client,
        RestServingClient(server.rest_url, timeout=20) as rest_client,
    ):
        aio = loop.run_until_complete(make_async())
        try:
            for client in (grpc_client, rest_client):
                assert client.predict("m", {"x": X}).as_numpy("y").tolist() == [4.0, 4.0]
            assert loop.run_until_complete(aio.predict("m", {"x": X})).model_spec.version == 7

            export_version(tf, base, 8)
            wait_for(lambda: _serving(grpc_client, 8), "version 8")
            for client in (grpc_client, rest_client):
                assert client.predict("m", {"inputs": TEXT}).as_numpy("y").tolist() == [1.0, 3.0]
            assert grpc_client.predict("m", {"inputs": TEXT}).model_spec.version == 8
            answer = loop.run_until_complete(aio.predict("m", {"inputs": TEXT}))
            assert answer.model_spec.version == 8

            shutil.rmtree(base / "8")  # the roll back: version 7 serves again
            wait_for(lambda: _serving(grpc_client, 7), "version 7 again")
            for client in (grpc_client, rest_client):
                assert client.predict("m", {"x": X}).as_numpy("y").tolist() == [4.0, 4.0]
            assert loop.run_until_complete(aio.predict("m", {"x": X})).model_spec.version == 7

            # Inputs no version takes are still refused before sending, in the usual words.
            with pytest.raises(InvalidInputError, match="unknown input 'inputs'; missing input 'x'"):
                grpc_client.predict("m", {"inputs": TEXT})
        finally:
            loop.run_until_complete(aio.close())
            loop.close()
