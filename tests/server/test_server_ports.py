"""A port already in use is one line, exit 2, naming the port: before any model loads."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("api", ["gRPC", "REST"])
def test_a_port_in_use_is_one_line_naming_it(module_base: Path, api: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = ["--port", str(port)] if api == "gRPC" else ["--port", "0", "--rest-port", str(port)]
        result = subprocess.run(
            [sys.executable, "-m", "tfship", "serve", "--model-base-path", str(module_base), *ports],
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if "proxy" not in k.lower()},
        )
    assert result.returncode == 2
    assert result.stderr == f"Error: {api} port 127.0.0.1:{port} is already in use\n"
