"""The client never imports TensorFlow: a process that only calls a server stays small and fast.

(``tests/test_imports.py`` shows that the same probe does see TensorFlow when it is imported.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

PROBE = """
import sys
from tfship.serve_client import {cls}
with {cls}({target!r}, timeout=20) as client:
    result = client.predict("m", {{"x": [[1.0, 2.0]]}})
    assert result.as_numpy("y").tolist() == [[7.0]], result.outputs
    assert client.metadata("m").signature().inputs["x"].dtype == "float32"
    assert client.status("m")[0].state == "AVAILABLE"
print("tensorflow" in sys.modules)
"""


def _run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_calls_leave_tensorflow_unimported(server: Any, transport: str) -> None:
    target = server.address if transport == "grpc" else server.rest_url
    cls = "ServingClient" if transport == "grpc" else "RestServingClient"
    assert _run(PROBE.format(cls=cls, target=target)) == "False"
