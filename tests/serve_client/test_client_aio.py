"""AsyncServingClient: same answers as the sync client, a bound on requests in flight."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import grpc
import numpy as np
import pytest

import tfship.serve_client as errors
from tfship.serve_client import AsyncServingClient, RegressResult, RetryPolicy

from .conftest import ScriptedServer, echo_predict


def test_every_method_against_the_server(server: Any) -> None:
    async def main() -> None:
        async with AsyncServingClient(server.address, timeout=20) as client:
            result = await client.predict("m", {"x": [[1.0, 2.0]]}, label="stable")
            assert np.allclose(result.as_numpy("y"), [[6.0]])
            assert result.model_spec.version == 1
            classified = await client.classify("m", [{"x": [0.0, 0.0]}], signature="classify")
            assert classified.classes[0][0][0] == "neg"
            regressed = await client.regress("m", [{"x": [1.0, 1.0]}], signature="regress")
            assert np.allclose(regressed.values, [4.0])
            multi = await client.multi_inference("m", [{"x": [1.0, 1.0]}], [("regress", "regress")])
            assert isinstance(multi.results[0], RegressResult)
            assert np.allclose(multi.results[0].as_numpy(), [4.0])
            assert (await client.metadata("m")).signature().inputs["x"].dtype == "float32"
            assert [s.version for s in await client.status("m")] == [2, 1]
            assert (await client.wait_until_available("m", timeout=5)).version == 2
            with pytest.raises(errors.VersionNotFoundError):
                await client.predict("m", {"x": [[1.0, 2.0]]}, version=8)
            with pytest.raises(errors.InvalidInputError, match="does not fit"):
                await client.predict("m", {"x": [1.0, 2.0]})
        await client.close()  # idempotent

    asyncio.run(main())


def test_concurrent_calls_get_their_own_answers(server: Any) -> None:
    rows = [[float(i), float(i)] for i in range(40)]

    async def main() -> list[Any]:
        async with AsyncServingClient(server.address, max_in_flight=8) as client:
            return await asyncio.gather(*(client.predict("m", {"x": [r]}) for r in rows))

    results = asyncio.run(main())
    for row, result in zip(rows, results):
        assert np.allclose(result.as_numpy("y"), [[row[0] * 3 + 2]])


def test_in_flight_bound(scripted: ScriptedServer) -> None:
    scripted.delay = 0.05
    seen = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def counting(request: bytes, context: Any) -> bytes:
        with lock:
            seen["now"] += 1
            seen["peak"] = max(seen["peak"], seen["now"])
        try:
            threading.Event().wait(0.05)
            return echo_predict(request, context)
        finally:
            with lock:
                seen["now"] -= 1

    scripted.handlers["Predict"] = counting

    async def main() -> int:
        async with AsyncServingClient(scripted.address, max_in_flight=3, validate=False) as c:
            await asyncio.gather(*(c.predict("m", {"x": [[1.0]]}) for _ in range(12)))
            return c.peak_in_flight

    peak = asyncio.run(main())
    assert peak == 3
    assert seen["peak"] == 3
    assert len(scripted.calls) == 12


def test_async_retries_on_unavailable(scripted: ScriptedServer) -> None:
    scripted.failures = [(grpc.StatusCode.UNAVAILABLE, "busy")] * 2 + [
        (grpc.StatusCode.INVALID_ARGUMENT, "bad")
    ]
    policy = RetryPolicy(attempts=5, initial_backoff=0.01, max_backoff=0.02)

    async def main() -> None:
        async with AsyncServingClient(scripted.address, retries=policy, validate=False) as c:
            with pytest.raises(errors.InvalidInputError, match="after 3 attempts"):
                await c.predict("m", {"x": [[1.0]]})
            assert (await c.predict("m", {"x": [[1.0]]})).as_numpy("x").shape == (1, 1)

    asyncio.run(main())
    assert len(scripted.calls) == 4


def test_async_micro_batching(scripted: ScriptedServer) -> None:
    from tfship.serve_client import MicroBatchingOptions

    config = MicroBatchingOptions(max_batch_size=8, batch_timeout_s=0.2)

    async def main() -> list[Any]:
        async with AsyncServingClient(scripted.address, validate=False, batching=config) as c:
            calls = [c.predict("m", {"x": [[float(i)], [float(i)]]}) for i in range(10)]
            return await asyncio.gather(*calls)

    results = asyncio.run(main())
    for i, result in enumerate(results):
        assert result.as_numpy("x").tolist() == [[float(i)], [float(i)]]
    assert len(scripted.calls) == 3  # 4 + 4 + 2 calls of 2 rows under 8 rows per batch


def test_async_batched_failure_reaches_every_caller(scripted: ScriptedServer) -> None:
    from tfship.serve_client import MicroBatchingOptions

    scripted.failures = [(grpc.StatusCode.NOT_FOUND, "Servable not found for request: Latest(m)")]

    async def main() -> list[Any]:
        config = MicroBatchingOptions(max_batch_size=4, batch_timeout_s=5.0)
        async with AsyncServingClient(scripted.address, validate=False, batching=config) as c:
            calls = [c.predict("m", {"x": [[1.0]]}) for _ in range(4)]
            return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(main())
    assert all(isinstance(r, errors.ModelNotFoundError) for r in results)
    assert len(scripted.calls) == 1
