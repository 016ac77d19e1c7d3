"""gRPC's health service, the readiness and liveness URLs and GET /v1/models, called with the
standard health client (grpcio-health-checking) and as a Kubernetes probe calls them."""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tfship.server import ModelConfig, ModelServer, ServerOptions, VersionPolicy

from .conftest import serve_process

pytestmark = pytest.mark.slow

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
PROBE_TIMEOUT_S = 5.0


def drop_in(module_base: Path, base: Path, version: int) -> None:
    """Publish a version atomically, as a trainer's export does."""
    staging = base.parent / f"staging-{base.name}-{version}"
    shutil.copytree(module_base / str(version), staging)
    staging.rename(base / str(version))


def check(address: str, service: str = "", timeout: float = 10.0) -> int:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        response = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        status: int = response.status
        return status


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class Watcher:
    """A Watch call read in a thread: every status it sends, then how it ended."""

    def __init__(self, address: str, service: str = "") -> None:
        self.channel = grpc.insecure_channel(address)
        stub = health_pb2_grpc.HealthStub(self.channel)
        self.call = stub.Watch(health_pb2.HealthCheckRequest(service=service), timeout=120)
        self.seen: list[int] = []
        self.ended: grpc.StatusCode | None = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for response in self.call:
                self.seen.append(response.status)
            self.ended = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            self.ended = exc.code()

    def wait_for(self, statuses: list[int], timeout: float = 60.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while self.seen != statuses and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.seen)

    def wait_until(self, status: int, timeout: float = 60.0) -> list[int]:
        """Wait until the last status seen is ``status``; every status seen."""
        deadline = time.monotonic() + timeout
        while (not self.seen or self.seen[-1] != status) and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.seen)

    def close(self) -> None:
        self.call.cancel()
        self.channel.close()


@pytest.fixture()
def servers() -> Iterator[list[ModelServer]]:
    started: list[ModelServer] = []
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def start(servers: list[ModelServer], *models: ModelConfig, **options: Any) -> ModelServer:
    settings = {"port": 0, "rest_port": 0, "poll_seconds": 0.1, "grpc_health": True, **options}
    server = ModelServer(list(models), ServerOptions(**settings))
    servers.append(server)
    return server.start()


def test_not_serving_until_a_version_loads_then_serving_then_not_serving_at_shutdown(
    tmp_path: Path, module_base: Path, servers: list[ModelServer]
) -> None:
    base = tmp_path / "m"
    base.mkdir()  # no version yet: the server starts and waits for one
    server = start(servers, ModelConfig("m", str(base)))
    watcher = Watcher(server.address)
    try:
        assert watcher.wait_for([NOT_SERVING]) == [NOT_SERVING]
        assert check(server.address) == NOT_SERVING
        assert check(server.address, "m") == NOT_SERVING
        assert get(f"{server.rest_url}/v1/health/ready") == (
            503,
            {"status": "NOT_SERVING", "models": {"m": "NOT_SERVING"}},
        )
        drop_in(module_base, base, 1)
        assert watcher.wait_for([NOT_SERVING, SERVING]) == [NOT_SERVING, SERVING]
        assert server.available_versions("m") == [1]
        assert check(server.address) == SERVING
        assert check(server.address, "m") == SERVING
        assert get(f"{server.rest_url}/v1/health/ready") == (
            200,
            {"status": "SERVING", "models": {"m": "SERVING"}},
        )
        server.stop()
        watcher.thread.join(30)
        # NOT_SERVING reaches the watcher before the server closes its listeners and ends the call
        assert watcher.seen == [NOT_SERVING, SERVING, NOT_SERVING]
        assert watcher.ended == grpc.StatusCode.UNAVAILABLE
    finally:
        watcher.close()


def test_each_model_has_its_own_name_and_the_server_waits_for_all(
    tmp_path: Path, module_base: Path, servers: list[ModelServer]
) -> None:
    empty = tmp_path / "later"
    empty.mkdir()
    server = start(servers, ModelConfig("now", str(module_base)), ModelConfig("later", str(empty)))
    statuses = {
        name: check(server.address, name)
        for name in (
            "now",
            "later",
            "",
            "PredictionService",
            "tensorflow.serving.PredictionService",
            "ModelService",
            "tensorflow.serving.ModelService",
        )
    }
    assert statuses == {
        "now": SERVING,
        "later": NOT_SERVING,
        "": NOT_SERVING,  # not every model is ready
        "PredictionService": NOT_SERVING,
        "tensorflow.serving.PredictionService": NOT_SERVING,
        "ModelService": SERVING,  # status and reloads answer whatever the models' states
        "tensorflow.serving.ModelService": SERVING,
    }
    drop_in(module_base, empty, 2)
    server.wait_until_available("later")
    assert [check(server.address, name) for name in ("", "later", "now")] == [SERVING] * 3


@pytest.mark.parametrize(
    "name", ["nope", "Now", "tensorflow.serving.SessionService", "grpc.health.v1.Health"]
)
def test_an_unknown_name_is_not_found(module_base: Path, servers: list[ModelServer], name: str) -> None:
    server = start(servers, ModelConfig("now", str(module_base)))
    with pytest.raises(grpc.RpcError) as caught:
        check(server.address, name)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert check(server.address) == SERVING


def test_watch_follows_a_name_a_reload_adds_and_removes(
    module_base: Path, servers: list[ModelServer]
) -> None:
    first = ModelConfig("first", str(module_base), VersionPolicy.parse("specific:1"))
    server = start(servers, first)
    second = Watcher(server.address, "second")
    whole = Watcher(server.address, "")
    try:
        assert second.wait_for([SERVICE_UNKNOWN]) == [SERVICE_UNKNOWN]
        assert whole.wait_for([SERVING]) == [SERVING]
        server.reload([first, ModelConfig("second", str(module_base), VersionPolicy.parse("specific:2"))])
        # NOT_SERVING while it loads, when the watch sees that moment
        assert second.wait_until(SERVING)[0] == SERVICE_UNKNOWN
        assert set(second.seen[1:-1]) <= {NOT_SERVING}
        added = len(second.seen)
        server.reload([first])
        assert second.wait_until(SERVICE_UNKNOWN)[added:] == [SERVICE_UNKNOWN]
        # the whole server never stopped serving: a model a reload adds counts once it has loaded
        assert whole.seen == [SERVING]
        assert second.ended is None and whole.ended is None
    finally:
        second.close()
        whole.close()


def test_watches_hold_no_threads_and_cancelled_ones_are_forgotten(
    module_base: Path, servers: list[ModelServer]
) -> None:
    # more open Watches than the server has threads for calls: Check and Predict still answer
    server = start(servers, ModelConfig("now", str(module_base)), grpc_workers=4)
    watchers = [Watcher(server.address, "now") for _ in range(12)]
    try:
        assert all(w.wait_for([SERVING]) == [SERVING] for w in watchers)
        started = time.monotonic()
        assert check(server.address, "now", timeout=5) == SERVING
        assert time.monotonic() - started < 5
        for watcher in watchers[:6]:
            watcher.close()
        for watcher in watchers[:6]:
            watcher.thread.join(10)
            assert watcher.ended == grpc.StatusCode.CANCELLED
        server.stop()
        for watcher in watchers[6:]:
            watcher.thread.join(30)
            assert (watcher.seen, watcher.ended) == ([SERVING, NOT_SERVING], grpc.StatusCode.UNAVAILABLE)
    finally:
        for watcher in watchers:
            watcher.close()


def test_the_flag_off_means_no_health_service(module_base: Path, servers: list[ModelServer]) -> None:
    server = start(servers, ModelConfig("now", str(module_base)), grpc_health=False)
    with pytest.raises(grpc.RpcError) as caught:
        check(server.address)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    # the REST URLs are there whether or not the gRPC service is
    assert get(f"{server.rest_url}/v1/health/ready")[0] == 200


def test_kubernetes_probes_on_tfship_serve(tmp_path: Path, module_base: Path) -> None:
    """As kubelet probes: gRPC Check for the configured service (default "") on a fresh
    connection each time with the probe's timeout as deadline, SERVING is success; httpGet on
    the readiness and liveness URLs, 200-399 is success. The timeout is a probe's
    ``timeoutSeconds: 5``, not the default 1 s, which a loaded test machine can miss."""
    base = tmp_path / "m"
    base.mkdir()
    args = ["--model_base_path", str(base), "--model_name", "m", "--port=0", "--rest_api_port=0"]
    args += ["--enable_grpc_healthcheck_service=true", "--file_system_poll_wait_seconds=1"]
    with serve_process(*args) as running:
        address, rest = running.info["grpc"], running.info["rest"]

        def grpc_probe(service: str = "") -> bool:
            options = [("grpc.primary_user_agent", "kube-probe/1.31")]
            with grpc.insecure_channel(address, options=options) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                try:
                    answer = stub.Check(
                        health_pb2.HealthCheckRequest(service=service), timeout=PROBE_TIMEOUT_S
                    )
                except grpc.RpcError:
                    return False
                return bool(answer.status == SERVING)

        def http_probe(path: str) -> bool:
            try:
                with urllib.request.urlopen(rest + path, timeout=PROBE_TIMEOUT_S) as reply:
                    return 200 <= reply.status < 400
            except urllib.error.HTTPError as exc:
                return 200 <= exc.code < 400

        assert (grpc_probe(), grpc_probe("m"), http_probe("/v1/health/ready")) == (False, False, False)
        assert (check(address), check(address, "m")) == (NOT_SERVING, NOT_SERVING)
        assert http_probe("/v1/health/live")
        drop_in(module_base, base, 1)
        deadline = time.monotonic() + 120
        while not grpc_probe() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert grpc_probe(), "version 1 did not load within 120 s"
        # many probes, each on its own connection, as kubelet sends them
        assert all(grpc_probe() and grpc_probe("m") for _ in range(20))
        assert http_probe("/v1/health/ready") and http_probe("/v1/health/live")


def test_get_v1_models_lists_every_model_with_its_versions(
    tmp_path: Path, module_base: Path, servers: list[ModelServer]
) -> None:
    empty = tmp_path / "later"
    empty.mkdir()
    models = [ModelConfig("module", str(module_base), VersionPolicy("all")), ModelConfig("later", str(empty))]
    server = start(servers, *models, grpc_health=False)
    status, listing = get(f"{server.rest_url}/v1/models")
    assert status == 200
    ok = {"error_code": "OK", "error_message": ""}
    assert listing == {
        "models": [
            {"name": "later", "ready": False, "model_version_status": []},
            {
                "name": "module",
                "ready": True,
                "model_version_status": [
                    {"version": "2", "state": "AVAILABLE", "status": ok},
                    {"version": "1", "state": "AVAILABLE", "status": ok},
                ],
            },
        ]
    }
    # each entry says what GET /v1/models/<name> says
    assert (
        get(f"{server.rest_url}/v1/models/module")[1]["model_version_status"]
        == (listing["models"][1]["model_version_status"])
    )
    server.reload([models[0]])  # a model left out of the configuration is no longer listed
    assert [m["name"] for m in get(f"{server.rest_url}/v1/models")[1]["models"]] == ["module"]


def test_a_model_that_loses_its_last_version_makes_the_server_not_ready(
    tmp_path: Path, module_base: Path, servers: list[ModelServer]
) -> None:
    base = tmp_path / "m"
    base.mkdir()
    drop_in(module_base, base, 1)
    server = start(servers, ModelConfig("m", str(base)))
    whole = Watcher(server.address)
    try:
        assert whole.wait_for([SERVING]) == [SERVING]
        shutil.rmtree(base / "1")
        assert whole.wait_for([SERVING, NOT_SERVING]) == [SERVING, NOT_SERVING]
        assert get(f"{server.rest_url}/v1/health/ready")[0] == 503
    finally:
        whole.close()


def test_a_model_a_reload_adds_counts_once_it_has_loaded(
    tmp_path: Path, module_base: Path, servers: list[ModelServer]
) -> None:
    empty = tmp_path / "added"
    empty.mkdir()
    first = ModelConfig("first", str(module_base))
    server = start(servers, first)
    server.reload([first, ModelConfig("added", str(empty))])
    # the models already serving keep the server ready while the new one waits for a version
    assert (check(server.address), check(server.address, "added")) == (SERVING, NOT_SERVING)
    assert get(f"{server.rest_url}/v1/health/ready") == (
        200,
        {"status": "SERVING", "models": {"added": "NOT_SERVING", "first": "SERVING"}},
    )
    drop_in(module_base, empty, 1)
    server.wait_until_available("added")
    assert check(server.address, "added") == SERVING
    shutil.rmtree(empty / "1")  # once it has served, losing it counts
    deadline = time.monotonic() + 60
    while check(server.address) == SERVING and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (check(server.address), check(server.address, "added")) == (NOT_SERVING, NOT_SERVING)
