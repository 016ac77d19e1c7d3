"""Smaller promises of the client: targets checked when it is made, metadata without the init
op, labels in status, one rule for strings, and what REST answers say about versions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.serve_client import AsyncServingClient, GrpcTransport, RestServingClient, ServingClient


@pytest.fixture(scope="module")
def rest(server: Any) -> Iterator[RestServingClient]:
    c = RestServingClient(server.rest_url, timeout=20)
    with c:
        yield c


@pytest.mark.parametrize(
    "target, message",
    [
        ("127.0.0.1", "names no port"),
        ("localhost:http", "port 'http' is not a port number"),
        ("127.0.0.1:0", "port '0' is not a port number"),
        ("http://127.0.0.1", "names no port"),
        ("http://127.0.0.1:99999", "port '99999' is not a port number"),
    ],
)
def test_a_target_without_a_good_port_is_refused_when_the_client_is_made(target: str, message: str) -> None:
    kinds: list[Any] = [ServingClient]
    if target.startswith("http"):
        kinds.append(RestServingClient)
    for kind in kinds:
        with pytest.raises(ValueError, match=message):
            kind(target)

    async def make() -> None:
        with pytest.raises(ValueError, match=message):
            AsyncServingClient(target)

    asyncio.run(make())
    result = CliRunner().invoke(cli, ["client", "status", "-s", target, "-m", "m"])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output


def test_metadata_lists_only_signatures_a_call_can_run(
    client: ServingClient, rest: RestServingClient
) -> None:
    for each in (client, rest):
        signatures = each.metadata("m").signatures
        assert sorted(signatures) == ["classify", "regress", "serving_default", "strings"]


def test_status_shows_the_labels_asked_about(client: ServingClient, rest: RestServingClient) -> None:
    for each in (client, rest):
        found = {s.version: s.labels for s in each.status("m", labels=["stable", "canary"])}
        assert found == {2: ("canary",), 1: ("stable",)}
        assert all(s.labels == () for s in each.status("m"))
    assert isinstance(client.transport, GrpcTransport)
    args = ["client", "status", "-s", client.transport.target, "-m", "m", "-l", "stable"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "labels: stable" in result.output


def test_strings_are_bytes_in_tensors_and_text_in_labels(
    client: ServingClient, rest: RestServingClient
) -> None:
    for each in (client, rest):
        upper = each.predict("m", {"text": ["ab"]}, signature="strings").as_numpy("upper")
        assert upper.tolist() == [b"AB"]
        classes = each.classify("m", [{"x": [1.0, 2.0]}], signature="classify").classes
        assert [label for label, _ in classes[0]] == ["neg", "pos"]


def test_rest_answers_name_the_version_asked_for(rest: RestServingClient) -> None:
    x = np.array([[1.0, 2.0]], np.float32)
    assert rest.predict("m", x, version=1).model_spec.version == 1
    assert rest.predict("m", x).model_spec.version is None  # TF Serving's REST answer names none
