"""What a caller can get wrong in a record or an input value is an ``InvalidInputError`` (a
``ServingCallError``), with a message in the caller's terms; errors name the call made; an
empty batch has the same answer on every transport.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tfship.serve_client import (
    AsyncServingClient,
    CallCancelledError,
    InvalidInputError,
    ModelNotFoundError,
    RestServingClient,
    ServingCallError,
    ServingClient,
)


@pytest.fixture(scope="module")
def rest(server: Any) -> Iterator[RestServingClient]:
    c = RestServingClient(server.rest_url, timeout=20)
    with c:
        yield c


BAD_RECORDS = [
    ([], "no examples: give at least one record"),
    ([{"x": {"a": 1.0}}], r"example 0: feature 'x': value \{'a': 1.0\} of type dict is not str"),
    ([{"x": [1.0, 2.0]}, {"x": [1.0, "a"]}], r"example 1: feature 'x': values .* mix floats and strings"),
    ([{"x": [2**70, 1]}], "example 0: feature 'x': 1180591620717411303424 is outside the range of int64"),
    (["x=1.0"], "example 0: a record must be a dict or tf.train.Example, got str"),
    ([b"\xff\xff"], "example 0: the bytes are not a serialized tf.train.Example"),
]


@pytest.mark.parametrize("records, message", BAD_RECORDS)
def test_a_bad_record_is_an_invalid_input_error(
    client: ServingClient, rest: RestServingClient, records: list[Any], message: str
) -> None:
    for each in (client, rest):
        for call in (each.classify, each.regress):
            with pytest.raises(InvalidInputError, match=message) as caught:
                call("m", records, signature="classify")
            assert str(caught.value).startswith(f"{call.__name__.capitalize()} model 'm': ")
            assert caught.value.model == "m"


BAD_INPUTS = [
    (
        {"x": [[1.0, 2.0], [3.0]]},
        r"input 'x': the lists are ragged: row \[1\] has 1 value where row \[0\] has 2",
    ),
    ({"x": [[1, 2], [3, 4, 5]]}, r"row \[1\] has 3 values where row \[0\] has 2"),
    ({"x": [[2**70, 1]]}, "input 'x': the integer 1180591620717411303424 is not exact in float32"),
    ([[1.0, 2.0]], None),  # a bare array for a one-input signature is fine
]


@pytest.mark.parametrize("inputs, message", BAD_INPUTS)
def test_a_bad_input_value_is_an_invalid_input_error(
    client: ServingClient, rest: RestServingClient, inputs: Any, message: str | None
) -> None:
    for each in (client, rest):
        if message is None:
            assert each.predict("m", inputs).as_numpy("y").shape == (1, 1)
            continue
        with pytest.raises(InvalidInputError, match=message):
            each.predict("m", inputs)


def test_a_call_on_a_closed_client_is_a_serving_call_error(server: Any) -> None:
    closed = ServingClient(server.address)
    closed.close()
    with pytest.raises(CallCancelledError, match="this ServingClient is closed"):
        closed.predict("m", {"x": [[1.0, 2.0]]})

    async def run() -> None:
        aio = AsyncServingClient(server.address)
        await aio.close()
        with pytest.raises(ServingCallError, match="this AsyncServingClient is closed"):
            await aio.classify("m", [{"x": [1.0, 2.0]}])

    asyncio.run(run())


def test_errors_name_the_call_the_user_made(client: ServingClient, rest: RestServingClient) -> None:
    for each in (client, rest):
        with pytest.raises(ModelNotFoundError) as caught:
            each.predict("nomodel", {"x": [[1.0, 2.0]]})
        text = str(caught.value)
        assert text.startswith("Predict model 'nomodel': its signature could not be fetched: ")
        assert "GetModelMetadata" not in text
        assert caught.value.model == "nomodel"


def test_an_empty_batch_has_the_same_answer_on_every_transport(
    client: ServingClient, rest: RestServingClient, server: Any
) -> None:
    empty = np.zeros((0, 2), np.float32)
    over_grpc = client.predict("m", empty)
    over_rest = rest.predict("m", empty)

    async def over_async_rest() -> Any:
        async with AsyncServingClient(server.rest_url) as aio:
            return await aio.predict("m", {"x": empty}, output_filter=["y"])

    filtered = asyncio.run(over_async_rest())
    assert {k: v.shape for k, v in over_grpc.outputs.items()} == {"y": (0, 1), "doubled": (0, 2)}
    for answer in (over_rest, filtered):
        for key, value in answer.outputs.items():
            assert value.shape == over_grpc.outputs[key].shape
            assert value.dtype == over_grpc.outputs[key].dtype
    assert set(filtered.outputs) == {"y"}
