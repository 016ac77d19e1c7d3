"""RestServingClient gives the same answers and errors as ServingClient on the same server."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tfship.serve_client as errors
from tfship.serve_client import RestServingClient, ServingClient, TlsConfig

X = [[1.0, 2.0], [3.0, 4.0]]


@pytest.fixture(scope="module")
def rest(server: Any) -> Any:
    with RestServingClient(server.rest_url, timeout=20) as c:
        yield c


@pytest.mark.parametrize(
    "call",
    [
        {"inputs": {"x": X}},
        {"inputs": {"x": X}, "version": 1},
        {"inputs": {"x": X}, "label": "stable"},
        {"inputs": {"text": ["ab", "é"]}, "signature": "strings"},
        # non-UTF-8 bytes survive REST both ways as {"b64": ...} (outputs named *_bytes)
        {
            "inputs": {"text": [b"\xff\x00a", b"b"]},
            "signature": "strings",
            "output_filter": ["upper_bytes"],
        },
        {"inputs": {"x": X}, "output_filter": ["doubled"]},
    ],
)
def test_predict_parity(client: ServingClient, rest: Any, call: dict[str, Any]) -> None:
    over_grpc = client.predict("m", **call)
    over_rest = rest.predict("m", **call)
    assert set(over_rest.outputs) == set(over_grpc.outputs)
    for key, value in over_grpc.outputs.items():
        assert over_rest.outputs[key].dtype == value.dtype
        if value.dtype == object:
            assert over_rest.outputs[key].tolist() == value.tolist()
        else:
            assert np.allclose(over_rest.outputs[key], value)
    assert over_rest.model_spec.name == "m"


def test_classify_regress_parity(client: ServingClient, rest: Any) -> None:
    records = [{"x": [1.0, 2.0]}, {"x": [0.0, 0.5]}]
    grpc_c = client.classify("m", records, signature="classify")
    rest_c = rest.classify("m", records, signature="classify")
    assert [[lbl for lbl, _ in row] for row in rest_c.classes] == [["neg", "pos"]] * 2
    assert np.allclose(rest_c.scores, grpc_c.scores, atol=1e-6)
    grpc_r = client.regress("m", records, signature="regress", version=1)
    rest_r = rest.regress("m", records, signature="regress", version=1)
    assert np.allclose(rest_r.values, grpc_r.values)
    ctx = rest.classify("m", [{}], context={"x": [0.0, 0.0]}, signature="classify")
    assert np.allclose(
        ctx.scores, client.classify("m", [{}], context={"x": [0.0, 0.0]}, signature="classify").scores
    )


def test_status_and_metadata_parity(client: ServingClient, rest: Any) -> None:
    assert rest.status("m") == client.status("m")
    rest_meta, grpc_meta = rest.metadata("m", version=1), client.metadata("m", version=1)
    assert set(rest_meta.signatures) == set(grpc_meta.signatures)
    assert rest_meta.model_spec.version == 1
    assert rest_meta.signature().inputs["x"].shape == (None, 2)
    assert rest.wait_until_available("m", timeout=5).version == 2


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"model": "ghost"}, errors.ModelNotFoundError),
        ({"model": "m", "version": 9}, errors.VersionNotFoundError),
        ({"model": "m", "signature": "nope"}, errors.ServingSignatureNotFoundError),
    ],
)
def test_error_parity(server: Any, kwargs: dict[str, Any], error: type) -> None:
    with (
        RestServingClient(server.rest_url, validate=False) as rest_c,
        ServingClient(server.address, validate=False) as grpc_c,
    ):
        for c in (rest_c, grpc_c):
            with pytest.raises(error):
                if "signature" in kwargs:
                    c.regress(examples=[{"x": [1.0, 1.0]}], **kwargs)
                else:
                    c.status(**kwargs)


def test_rest_validation_and_server_errors(rest: Any, server: Any) -> None:
    with pytest.raises(errors.InvalidInputError, match="dtype float64 does not match"):
        rest.predict("m", {"x": np.array(X)})
    with RestServingClient(server.rest_url, validate=False) as raw:
        with pytest.raises(errors.InvalidInputError) as info:
            raw.predict("m", {"x": [["a", "b"]]})
    assert info.value.code == "INVALID_ARGUMENT"


def test_down_rest_server_is_unavailable() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with RestServingClient(f"127.0.0.1:{port}", retries=1) as rest_c:
        with pytest.raises(errors.UnavailableError, match="after 2 attempts"):
            rest_c.status("m")


def test_rest_has_no_multi_inference(rest: Any) -> None:
    with pytest.raises(errors.UnimplementedError, match="use ServingClient"):
        rest.multi_inference("m", [{"x": [1.0, 1.0]}], [("regress", "regress")])


def _https_status_server(tmp_path: Any, cert: bytes, key: bytes, client_ca: bytes | None = None) -> Any:
    """An HTTPS server answering GetModelStatus with version 5 AVAILABLE; it records the
    certificate of each client (with ``client_ca``, it requires one signed by that CA)."""
    import json as json_module
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = {"model_version_status": [{"version": "5", "state": "AVAILABLE", "status": {"error_code": "OK"}}]}
    data = json_module.dumps(body).encode()
    peers: list[Any] = []

    class Status(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names
            peers.append(self.connection.getpeercert())
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)

    class Recording(ThreadingHTTPServer):
        peers: list[Any]

    httpd = Recording(("127.0.0.1", 0), Status)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
    if client_ca is not None:
        (tmp_path / "ca.pem").write_bytes(client_ca)
        context.load_verify_locations(str(tmp_path / "ca.pem"))
        context.verify_mode = ssl.CERT_REQUIRED
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    httpd.peers = peers
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_rest_over_tls(tmp_path: Any) -> None:
    from .test_client_resilience import _certificate

    cert, key, _ = _certificate("localhost")
    httpd = _https_status_server(tmp_path, cert, key)
    try:
        port = httpd.server_address[1]
        with RestServingClient(f"https://localhost:{port}", tls=TlsConfig(ca_cert=cert)) as c:
            assert [(s.version, s.state) for s in c.status("m")] == [(5, "AVAILABLE")]
        with RestServingClient(f"https://localhost:{port}", retries=0, tls=True) as untrusted:
            with pytest.raises(errors.TlsError, match="CERTIFICATE_VERIFY_FAILED"):
                untrusted.status("m")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_rest_over_mutual_tls_with_pem_bytes_and_a_server_name(tmp_path: Any) -> None:
    from .test_client_resilience import _certificate

    server_cert, server_key, _ = _certificate("serving.test")
    ca_cert, _, ca = _certificate("client-ca")
    client_cert, client_key, _ = _certificate("client", issuer=ca)
    httpd = _https_status_server(tmp_path, server_cert, server_key, client_ca=ca_cert)
    url = f"https://127.0.0.1:{httpd.server_address[1]}"
    try:
        tls = TlsConfig(
            ca_cert=server_cert, client_cert=client_cert, client_key=client_key, server_name="serving.test"
        )
        with RestServingClient(url, tls=tls) as c:
            assert [(s.version, s.state) for s in c.status("m")] == [(5, "AVAILABLE")]
        assert httpd.peers[0]["subject"] == ((("commonName", "client"),),)
        no_name = TlsConfig(ca_cert=server_cert, client_cert=client_cert, client_key=client_key)
        with RestServingClient(url, tls=no_name, retries=0) as c:
            with pytest.raises(errors.TlsError, match="CERTIFICATE_VERIFY_FAILED"):
                c.status("m")
    finally:
        httpd.shutdown()
        httpd.server_close()


def _http_server(body: bytes, delay: float = 0.0) -> Any:
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names
            time.sleep(delay)
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first: that is the point of the deadline test

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_rest_non_json_answer_is_malformed() -> None:
    httpd = _http_server(b"<html>proxy error</html>")
    try:
        with RestServingClient(f"127.0.0.1:{httpd.server_address[1]}") as c:
            with pytest.raises(errors.MalformedResponseError, match="not JSON: b'<html>proxy"):
                c.status("m")
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.timing
def test_rest_deadline() -> None:
    import time

    httpd = _http_server(b"{}", delay=1.0)
    try:
        with RestServingClient(f"127.0.0.1:{httpd.server_address[1]}", timeout=0.2) as c:
            start = time.monotonic()
            with pytest.raises(errors.DeadlineExceededError):
                c.status("m")
            assert time.monotonic() - start < 0.9
    finally:
        httpd.shutdown()
        httpd.server_close()
