"""`inspect request --format curl|python` prints a command and a snippet that a real server answers,
addressed to the model name given with `--model-name`."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow

SIGNATURES = ("serving_default", "predict", "raw:predict")


def _request(*args: str) -> str:
    result = CliRunner().invoke(cli, ["inspect", "request", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def served(tiny_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[pathlib.Path, Any]]:
    from tfship.server import ModelServer, ServerOptions

    version = tmp_path_factory.mktemp("snippets") / "export-dir" / "3"
    shutil.copytree(tiny_model.export("best"), version)
    server = ModelServer.from_base_path(
        version.parent, "penguins", options=ServerOptions(port=0, rest_port=0)
    ).start()
    try:
        yield version, server
    finally:
        server.stop()


@pytest.mark.parametrize("signature", SIGNATURES)
def test_the_curl_line_is_answered(served: tuple[pathlib.Path, Any], signature: str) -> None:
    version, server = served
    line = _request(
        str(version),
        "--signature",
        signature,
        "--model-name",
        "penguins",
        "--format",
        "curl",
        "--server",
        server.rest_url,
    )
    assert line.startswith(f"curl -sS -X POST {server.rest_url}/v1/models/penguins:")
    assert line.count("\n") == 1
    answer = json.loads(subprocess.run(line, shell=True, capture_output=True, check=True, text=True).stdout)
    assert "error" not in answer
    assert len(answer["results" if signature == "serving_default" else "predictions"]) == 1


@pytest.mark.parametrize("signature", SIGNATURES)
def test_the_python_snippet_runs(served: tuple[pathlib.Path, Any], signature: str) -> None:
    version, server = served
    for target in (server.address, server.rest_url):
        snippet = _request(
            str(version),
            "--signature",
            signature,
            "--model-name",
            "penguins",
            "--format",
            "python",
            "--server",
            target,
        )
        assert f"ServingClient({target!r})" in snippet
        namespace: dict[str, Any] = {}
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            exec(compile(snippet, "snippet", "exec"), namespace)
        result = namespace["result"]
        if signature == "serving_default":
            assert len(result.classes) == 1
        else:
            assert result.as_numpy("probabilities").shape == (1, 3)
        assert printed.getvalue()


def test_the_default_model_name_is_the_base_directory(served: tuple[pathlib.Path, Any]) -> None:
    version, _ = served
    assert "/v1/models/export-dir:classify" in _request(str(version), "--format", "curl")
    assert "client.classify('export-dir'," in _request(str(version), "--format", "python")
    assert "http://localhost:8501/" in _request(str(version), "--format", "curl")
    assert "ServingClient('localhost:8500')" in _request(str(version), "--format", "python")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model-name", " "], "Error: --model-name is empty: give the name the server serves the model"),
        (["--server", "localhost:9000"], "Error: --server is used by --format curl and python only"),
    ],
)
def test_bad_options_are_refused(served: tuple[pathlib.Path, Any], args: list[str], message: str) -> None:
    version, _ = served
    result = CliRunner().invoke(cli, ["inspect", "request", str(version), *args])
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(message)
