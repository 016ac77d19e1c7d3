"""``timeout=`` bounds the whole call on REST, as it does on gRPC: fetching the signature,
building the request, connecting, sending, the server's time, receiving and decoding, retries
included.

The servers here are real HTTP servers on 127.0.0.1 that answer slowly in the ways a loaded
server or network does: late headers, a body that trickles in, a slow metadata answer; and
the local server, sent more records than can be built in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tfship.serve_client import AsyncServingClient, DeadlineExceededError, RestServingClient, ServingClient

# every test here holds a call to a wall-time bound
pytestmark = pytest.mark.timing

_TENSOR = {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1"}, {"size": "2"}]}}
_METADATA = {
    "model_spec": {"name": "m", "version": "1"},
    "metadata": {
        "signature_def": {
            "signature_def": {
                "serving_default": {
                    "method_name": "tensorflow/serving/predict",
                    "inputs": {"x": {"name": "x:0", **_TENSOR}},
                    "outputs": {"y": {"name": "y:0", **_TENSOR}},
                }
            }
        }
    },
}


class SlowRest:
    """TF Serving's REST answers for one model, ``m``, with chosen delays: ``metadata_delay``
    before the metadata answer, and a Predict answer whose body arrives in ``pieces`` pieces
    ``gap`` seconds apart (the headers come at once)."""

    def __init__(
        self, *, metadata_delay: float = 0.0, pieces: int = 1, gap: float = 0.0, answer: Any = None
    ) -> None:
        owner = self
        self.metadata_delay, self.pieces, self.gap = metadata_delay, pieces, gap
        self.answer = {"outputs": [[0.5, 1.5]] * 4000} if answer is None else answer
        self.gets = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's names
                owner.gets += 1
                time.sleep(owner.metadata_delay)
                self._send([json.dumps(_METADATA).encode()])

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                body = json.dumps(owner.answer).encode()
                size = -(-len(body) // owner.pieces)
                self._send([body[i : i + size] for i in range(0, len(body), size)])

            def _send(self, parts: list[bytes]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(sum(map(len, parts))))
                self.end_headers()
                self.wfile.flush()
                for index, part in enumerate(parts):
                    if index:
                        time.sleep(owner.gap)
                    try:
                        self.wfile.write(part)
                        self.wfile.flush()
                    except OSError:
                        return  # the client gave up: its deadline passed

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def trickling() -> Iterator[SlowRest]:
    """Predict answers that take 3 s to arrive, in 10 pieces: no single read is slow."""
    server = SlowRest(pieces=10, gap=0.3)
    try:
        yield server
    finally:
        server.close()


X = [[1.0, 2.0]]


def _elapsed(func: Any) -> float:
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="Predict model 'm'"):
        func()
    return time.monotonic() - start


def test_a_trickling_rest_answer_stops_at_the_deadline(trickling: SlowRest) -> None:
    with RestServingClient(trickling.url, timeout=30) as client:
        client.metadata("m")  # the signature is cached: only Predict is slow
        assert _elapsed(lambda: client.predict("m", {"x": X}, timeout=1.0)) < 1.7


def test_a_trickling_rest_answer_stops_at_the_deadline_async(trickling: SlowRest) -> None:
    async def run() -> float:
        async with AsyncServingClient(trickling.url, timeout=30) as client:
            await client.metadata("m")
            start = time.monotonic()
            with pytest.raises(DeadlineExceededError, match="Predict model 'm'"):
                await client.predict("m", {"x": X}, timeout=1.0)
            return time.monotonic() - start

    assert asyncio.run(run()) < 1.7


def test_the_signature_fetch_spends_the_calls_own_deadline() -> None:
    server = SlowRest(metadata_delay=3.0)
    try:
        with RestServingClient(server.url, timeout=30) as client:
            start = time.monotonic()
            with pytest.raises(DeadlineExceededError, match="Predict model 'm'"):
                client.predict("m", {"x": X}, timeout=1.0)
            assert time.monotonic() - start < 1.7
    finally:
        server.close()


def test_a_rest_answer_that_does_not_fit_the_cached_signature_drops_it() -> None:
    from tfship.serve_client import MalformedResponseError

    server = SlowRest(answer={"outputs": [["a", "b"]]})  # strings where floats are cached
    try:
        with RestServingClient(server.url, timeout=30) as client:
            for _ in range(2):
                with pytest.raises(MalformedResponseError):
                    client.predict("m", {"x": X})
            assert server.gets == 2  # fetched again after the answer that did not fit
    finally:
        server.close()


# -------------------------------------------------- the client's own work counts: many records

# Building 50k Examples takes the client 0.5 s or more: far beyond the timeouts below.
MANY = [{"x": [1.0, 2.0]}] * 50_000
TINY = 0.1
SLACK = 0.3  # this machine is shared and noisy: a loose bound, still far below the building time


@contextlib.contextmanager
def _no_collector_pause() -> Iterator[None]:
    """The timed call without a pause of Python's cycle collector: in a test process that has
    built many models the collector can stop every thread for most of a second, a pause no
    deadline check of the client can shorten."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _raises_in_time(call: Any, what: str) -> None:
    with _no_collector_pause():
        start = time.monotonic()
        with pytest.raises(DeadlineExceededError, match=f"{what} model 'm'") as info:
            call()
        elapsed = time.monotonic() - start
    assert elapsed < TINY + SLACK, f"raised after {elapsed:.3f} s with timeout={TINY}"
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("rest", [False, True], ids=["grpc", "rest"])
def test_building_many_records_stops_at_the_deadline(server: Any, rest: bool) -> None:
    kind, target = (RestServingClient, server.rest_url) if rest else (ServingClient, server.address)
    with kind(target, timeout=30) as client:
        client.metadata("m")  # connected, and the signature cached
        _raises_in_time(lambda: client.classify("m", MANY, signature="classify", timeout=TINY), "Classify")
        _raises_in_time(lambda: client.regress("m", MANY, signature="regress", timeout=TINY), "Regress")
        if not rest:
            tasks = [("classify", "classify")]
            _raises_in_time(lambda: client.multi_inference("m", MANY, tasks, timeout=TINY), "MultiInference")


def test_building_many_records_stops_at_the_deadline_async(server: Any) -> None:
    async def call() -> tuple[float, str]:
        async with AsyncServingClient(server.address, timeout=30) as client:
            await client.metadata("m")  # connected, and the signature cached: not timed
            with _no_collector_pause():
                start = time.monotonic()
                with pytest.raises(DeadlineExceededError, match="Classify model 'm'") as info:
                    await client.classify("m", MANY, signature="classify", timeout=TINY)
                return time.monotonic() - start, str(info.value)

    elapsed, message = asyncio.run(call())
    assert elapsed < TINY + SLACK, f"raised after {elapsed:.3f} s with timeout={TINY}"
    assert "\n" not in message


@pytest.mark.parametrize("rest", [False, True], ids=["grpc", "rest"])
def test_no_answer_comes_after_the_deadline(server: Any, rest: bool) -> None:
    """Timeouts around the time a call takes: each call answers in time or raises, never late."""
    kind, target = (RestServingClient, server.rest_url) if rest else (ServingClient, server.address)
    records = MANY[:2000]
    with kind(target, timeout=30) as client:
        client.classify("m", records[:1], signature="classify")
        outcomes = []
        for timeout in [0.01 * step for step in range(1, 13)] + [0.2, 0.4, 0.8]:
            with _no_collector_pause():
                start = time.monotonic()
                try:
                    client.classify("m", records, signature="classify", timeout=timeout)
                except DeadlineExceededError:
                    outcomes.append("late")
                    continue
                elapsed = time.monotonic() - start
            assert elapsed <= timeout + 0.05, f"answered after {elapsed:.3f} s with timeout={timeout:.2f}"
            outcomes.append("answered")
    assert "answered" in outcomes  # the sweep reached timeouts long enough to answer
