"""`tfship serve` stops within a second of SIGTERM, says so once, and a restart on the same ports
works at once even though a client still held a kept-alive REST connection; a port another live
server listens on is still refused."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import serve_process

pytestmark = pytest.mark.slow

ENV = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(base: Path, grpc_port: int, rest_port: int) -> tuple[subprocess.Popen[str], dict[str, object]]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfship",
            "serve",
            "--model-base-path",
            str(base),
            "--model-name",
            "m",
            "--port",
            str(grpc_port),
            "--rest-port",
            str(rest_port),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise AssertionError(f"tfship serve did not start: {process.communicate()[1]}")
    return process, json.loads(line)


@pytest.mark.timing
def test_sigterm_stops_an_idle_server_within_a_second_with_one_line(module_base: Path) -> None:
    process, _ = _start(module_base, 0, 0)
    try:
        time.sleep(1.0)  # idle: no call in flight, the pollers asleep
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        took = time.monotonic() - began
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert took < 1.0, f"stopping took {took:.2f} s"
    assert [line for line in stderr.splitlines() if "stopped" in line] == ["server stopped"]


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL])
def test_a_restart_takes_the_rest_port_back_at_once(module_base: Path, ending: signal.Signals) -> None:
    grpc_port, rest_port = _free_port(), _free_port()
    first, _ = _start(module_base, grpc_port, rest_port)
    client = http.client.HTTPConnection("127.0.0.1", rest_port, timeout=30)
    try:
        client.request("GET", "/v1/models/m")
        answer = client.getresponse()
        assert answer.status == 200 and answer.getheader("Connection", "keep-alive") != "close"
        answer.read()  # the connection stays open, kept alive
        # another live server on the same REST port is refused, naming the port
        taken = subprocess.run(
            [
                sys.executable,
                "-m",
                "tfship",
                "serve",
                "--model-base-path",
                str(module_base),
                "--port",
                "0",
                "--rest-port",
                str(rest_port),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=ENV,
        )
        assert taken.returncode == 2
        assert taken.stderr == f"Error: REST port 127.0.0.1:{rest_port} is already in use\n"
        first.send_signal(ending)
        first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
        client.close()
    with serve_process(
        "--model-base-path",
        str(module_base),
        "--model-name",
        "m",
        "--port",
        str(grpc_port),
        "--rest-port",
        str(rest_port),
    ) as restarted:
        assert restarted.info["rest"] == f"http://127.0.0.1:{rest_port}"
        again = http.client.HTTPConnection("127.0.0.1", rest_port, timeout=30)
        try:
            again.request("GET", "/v1/models/m")
            assert again.getresponse().status == 200
        finally:
            again.close()
