"""TLS mistakes are told apart from a dead server: a ``TlsError`` at once, naming the cause,
on gRPC and REST, and without gRPC's handshake lines on stderr.

The three mistakes: a certificate that does not verify (no CA given for a self-signed one),
a server name the certificate does not carry, and TLS to a port that speaks none.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tfship.serve_client import RestServingClient, ServingCallError, ServingClient, TlsConfig, TlsError

from .conftest import ScriptedServer
from .test_client_resilience import _tls_server, pki  # noqa: F401 - pki is a fixture
from .test_client_rest import _https_status_server

UNVERIFIED = "does not verify against the CA certificate"
WRONG_NAME = "does not name the server asked for"
PLAIN_PORT = "does not speak TLS"


@pytest.fixture()
def grpc_tls(pki: dict[str, bytes]) -> Iterator[ScriptedServer]:  # noqa: F811
    server = _tls_server(pki, mutual=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def https(pki: dict[str, bytes], tmp_path: Path) -> Iterator[str]:  # noqa: F811
    httpd = _https_status_server(tmp_path, pki["server_cert"], pki["server_key"])
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _tls_failure(client: Any) -> TlsError:
    """The error of one call, checked to be a TlsError raised after one attempt."""
    with client:
        with pytest.raises(TlsError) as caught:
            client.status("m", timeout=10)
    error = caught.value
    assert isinstance(error, ServingCallError)
    assert "attempts" not in str(error)  # never retried
    assert "check that the server runs at that address" not in str(error)
    return error


def test_grpc_tls_mistakes(grpc_tls: ScriptedServer, pki: dict[str, bytes], server: Any) -> None:  # noqa: F811
    good = TlsConfig(ca_cert=pki["server_cert"], server_name="serving.test")
    assert UNVERIFIED in str(_tls_failure(ServingClient(grpc_tls.address, tls=True)))
    wrong_name = TlsConfig(ca_cert=pki["server_cert"], server_name="other.test")
    assert WRONG_NAME in str(_tls_failure(ServingClient(grpc_tls.address, tls=wrong_name)))
    assert PLAIN_PORT in str(_tls_failure(ServingClient(server.address, tls=good)))


def test_rest_tls_mistakes(https: str, pki: dict[str, bytes], server: Any) -> None:  # noqa: F811
    good = TlsConfig(ca_cert=pki["server_cert"], server_name="serving.test")
    with RestServingClient(https, tls=good) as client:
        assert client.status("m")[0].version == 5
    assert UNVERIFIED in str(_tls_failure(RestServingClient(https, tls=True)))
    unnamed = TlsConfig(ca_cert=pki["server_cert"])
    assert WRONG_NAME in str(_tls_failure(RestServingClient(https, tls=unnamed)))
    plain = server.rest_url.replace("http://", "https://")
    assert PLAIN_PORT in str(_tls_failure(RestServingClient(plain, tls=good)))


def test_grpc_handshake_lines_stay_off_stderr(grpc_tls: ScriptedServer) -> None:
    script = textwrap.dedent(
        f"""
        from tfship.serve_client import ServingClient, TlsError
        with ServingClient({grpc_tls.address!r}, tls=True) as client:
            try:
                client.status("m", timeout=10)
            except TlsError as exc:
                print(type(exc).__name__)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "TlsError", done.stderr
    assert "ssl_transport_security" not in done.stderr
    assert "andshake" not in done.stderr
