"""Requests built by ``tfship inspect request`` are accepted by a TF Serving API server.

The server is tfship's local one (TF Serving's gRPC and REST APIs) on 127.0.0.1 port 0; the
warmup file we write is replayed by it at load time.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import urllib.request
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow


def _request(*args: str) -> str:
    result = CliRunner().invoke(cli, ["inspect", "request", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as response:
        assert response.status == 200
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def test_rest_and_warmup_requests_are_served(
    exports: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    from tfship.server import ModelServer, ServerOptions

    export = tmp_path / "linear" / "3"
    shutil.copytree(exports["linear_parsing"], export)
    warmup = export / "assets.extra" / "tf_serving_warmup_requests"
    _request(str(export), "--signature", "predict", "--format", "warmup", "-o", str(warmup))
    classify = json.loads(
        _request(str(export), "--value", "age=50", "--value", "color=red", "--batch", "2").split("\n", 1)[1]
    )
    predict = json.loads(_request(str(export), "--signature", "predict").split("\n", 1)[1])
    server = ModelServer.from_base_path(
        export.parent, "linear", options=ServerOptions(port=0, rest_port=0)
    ).start()
    try:
        base = f"{server.rest_url}/v1/models/linear"
        classified = _post(f"{base}:classify", classify)
        assert len(classified["results"]) == 2 and len(classified["results"][0]) == 2
        predicted = _post(f"{base}:predict", predict)
        assert len(predicted["predictions"]) == 1
        assert "probabilities" in predicted["predictions"][0]
    finally:
        server.stop()
