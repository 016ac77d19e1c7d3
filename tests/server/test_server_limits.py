"""Faults a long-running server meets: a base path it cannot list, clients that hold every
connection, bodies that inflate without bound. Real servers, real sockets, real limits."""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tfship.server import LocalServerError, ModelConfig, ModelServer, ServerOptions

from .conftest import serve_process
from .test_server_http import BODY, EXPECTED, PATH, Reader, post

pytestmark = pytest.mark.slow

METRICS = "/metrics"


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


def monitoring_config(tmp_path: Path) -> Path:
    config = tmp_path / "monitoring.config"
    config.write_text(f'prometheus_config {{ enable: true path: "{METRICS}" }}')
    return config


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def peak_rss_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM line")


def sample(page: bytes, name: str) -> float:
    for line in page.decode().splitlines():
        if line.startswith(name):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in the metrics page")


# file descriptors --------------------------------------------------------------------------------
def test_a_base_path_that_cannot_be_listed_keeps_the_model_served(tmp_path: Path, module_base: Path) -> None:
    """Idle connections use up a 48-descriptor table; the next polls fail with EMFILE.

    Each failed poll keeps the served version (it used to be taken as "no versions" and
    unloaded), is logged once and counted on the metrics page.
    """
    args = [
        "--model-base-path",
        str(module_base),
        "--model-name",
        "module",
        "--port",
        "0",
        "--rest-port",
        "0",
        "--poll-seconds",
        "0.05",
        "--rest-max-connections",
        "1000",
        "--monitoring-config-file",
        str(monitoring_config(tmp_path)),
    ]
    with serve_process(*args, open_files=(48, 48)) as served:
        rest = address(served.info["rest"])
        with socket.create_connection(rest, timeout=30) as kept:
            reader = Reader(kept)
            kept.sendall(post(PATH, BODY))
            assert json.loads(reader.response()[2]) == EXPECTED
            flood: list[socket.socket] = []
            try:
                while open_files(served.pid) < 48 and len(flood) < 100:
                    flood.append(socket.create_connection(rest, timeout=30))
                    time.sleep(0.01)  # let the server accept it
                assert open_files(served.pid) == 48
                time.sleep(0.5)  # polls meet the full table
                kept.sendall(post(PATH, BODY) + get("/v1/models/module") + get(METRICS))
                status, _, body = reader.response()
                assert status == "HTTP/1.1 200 OK" and json.loads(body) == EXPECTED
                states = json.loads(reader.response()[2])["model_version_status"]
                assert [(s["version"], s["state"]) for s in states] == [("2", "AVAILABLE")]
                page = reader.response()[2]
                assert sample(page, 'tfship_base_path_poll_errors_total{model_name="module"}') >= 1
            finally:
                for conn in flood:
                    conn.close()
            time.sleep(0.3)
    lines = served.stderr.splitlines()
    unlisted = [line for line in lines if "Could not list base path" in line]
    assert len(unlisted) == 1 and "Too many open files" in unlisted[0], served.stderr
    assert any("can be listed again" in line for line in lines)
    assert "Traceback" not in served.stderr


def test_a_base_path_that_cannot_be_listed_at_start_up_is_named(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)  # exists as a name, lists as ELOOP, even for root
    with pytest.raises(
        LocalServerError,
        match=(f"^Could not list base path {loop} for servable m: Too many levels of symbolic links$"),
    ):
        ModelServer([ModelConfig("m", str(loop))], ServerOptions(port=0)).start()


def test_serve_raises_the_open_file_limit_to_the_hard_limit(module_base: Path) -> None:
    args = ["--model-base-path", str(module_base), "--port", "0"]
    with serve_process(*args, open_files=(256, 4096)) as served:
        limits = Path(f"/proc/{served.pid}/limits").read_text()
    line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    assert line.split()[3:5] == ["4096", "4096"]


@pytest.mark.timing
def test_connections_past_the_limit_are_answered_503_at_once(tmp_path: Path, module_base: Path) -> None:
    options = ServerOptions(port=0, rest_port=0, rest_max_connections=3, prometheus_path=METRICS)
    with ModelServer([ModelConfig("module", str(module_base))], options).start() as server:
        rest = address(server.rest_url or "")
        idle = [socket.create_connection(rest, timeout=30) for _ in range(3)]
        try:
            time.sleep(0.1)
            began = time.perf_counter()
            with socket.create_connection(rest, timeout=30) as extra:
                status, headers, body = Reader(extra).response()
            assert time.perf_counter() - began < 1.0
            assert status == "HTTP/1.1 503 Service Unavailable"
            assert headers["connection"] == "close"
            assert "3 REST connections open" in json.loads(body)["error"]
            idle.pop().close()  # a slot frees: the next client is served
            time.sleep(0.1)
            with socket.create_connection(rest, timeout=30) as conn:
                reader = Reader(conn)
                conn.sendall(post(PATH, BODY) + get(METRICS))
                assert json.loads(reader.response()[2]) == EXPECTED
                assert sample(reader.response()[2], "tfship_rest_connections_refused_total") == 1
        finally:
            for conn in idle:
                conn.close()


def test_the_default_connection_limit_is_1024_or_half_the_open_files() -> None:
    import resource

    from tfship.server._rest import connection_limit

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert connection_limit(None) == min(1024, soft // 2)
    assert connection_limit(7) == 7


# request bodies ----------------------------------------------------------------------------------
def gzip_bomb(inflated: int) -> bytes:
    """A gzip stream of ``inflated`` zero bytes (about 1,000 times smaller), made in pieces."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    zeros = bytes(1 << 20)
    parts = [packer.compress(zeros) for _ in range(inflated >> 20)]
    return b"".join([*parts, packer.flush()])


def test_a_gzip_bomb_is_refused_and_memory_stays_bounded(module_base: Path) -> None:
    """512 MiB of zeros in a 0.5 MB gzip body: refused past the 100 MiB cap.

    Inflating it whole took the server's peak RSS up by over 512 MiB; inflated in steps and
    stopped at the cap, the peak grows by about the cap.
    """
    bomb = gzip_bomb(512 << 20)
    args = [
        "--model-base-path",
        str(module_base),
        "--model-name",
        "module",
        "--port",
        "0",
        "--rest-port",
        "0",
    ]
    with serve_process(*args) as served:
        with socket.create_connection(address(served.info["rest"]), timeout=60) as conn:
            reader = Reader(conn)
            conn.sendall(post(PATH, gzip.compress(BODY), Content_Encoding="gzip"))
            assert json.loads(reader.response()[2]) == EXPECTED
            before = peak_rss_kib(served.pid)
            began = time.perf_counter()
            conn.sendall(post(PATH, bomb, Content_Encoding="gzip"))
            status, _, body = reader.response()
            took = time.perf_counter() - began
            grown_mib = (peak_rss_kib(served.pid) - before) / 1024
            print(f"gzip bomb: {len(bomb)} bytes -> 512 MiB; peak RSS +{grown_mib:.0f} MiB; {took:.2f} s")
            assert grown_mib < 150
            assert status == "HTTP/1.1 400 Bad Request"
            assert json.loads(body)["error"] == (
                "gzip request body inflates past 104857600 bytes, the server's limit"
            )
            conn.sendall(post(PATH, BODY))  # the connection still serves
            assert json.loads(reader.response()[2]) == EXPECTED
