"""The REST port's HTTP over real sockets: keep-alive at full speed, HTTP/1.0 and 1.1,
Content-Length on every answer, chunked, gzip and 100-continue request bodies."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import statistics
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest

from tfship.server import ModelServer, ServerOptions

pytestmark = pytest.mark.slow

PATH = "/v1/models/module:predict"
BODY = json.dumps({"instances": [[1.0, 2.0]]}).encode()
EXPECTED = {"predictions": [{"doubled": [2.0, 4.0], "y": [7.0]}]}


def host_port(server: ModelServer) -> tuple[str, int]:
    parts = urlsplit(server.rest_url or "")
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


@pytest.fixture()
def sock(server: ModelServer) -> Iterator[socket.socket]:
    with socket.create_connection(host_port(server), timeout=30) as conn:
        yield conn


class Reader:
    """Reads HTTP/1.x responses off a raw socket, trusting only Content-Length for framing."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.buffer = b""

    def _fill(self) -> bool:
        data = self.conn.recv(65536)
        self.buffer += data
        return bool(data)

    def response(self) -> tuple[str, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buffer:
            assert self._fill(), f"connection closed mid-response: {self.buffer!r}"
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        size = int(headers["content-length"])
        while len(self.buffer) < size:
            assert self._fill(), "connection closed mid-body"
        body, self.buffer = self.buffer[:size], self.buffer[size:]
        return status, headers, body

    def closed(self) -> bool:
        """The server closed the connection after its last answer."""
        return not self.buffer and not self._fill()


def post(path: str, body: bytes, version: str = "HTTP/1.1", **headers: str) -> bytes:
    lines = [f"POST {path} {version}", "Host: localhost", "Content-Type: application/json"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    if "Transfer_Encoding" not in headers:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(body: bytes, *sizes: int) -> bytes:
    out, at = b"", 0
    for size in sizes:
        out += f"{size:x};ext=1\r\n".encode() + body[at : at + size] + b"\r\n"
        at += size
    assert at == len(body)
    return out + b"0\r\nX-Trailer: ignored\r\n\r\n"


# speed -------------------------------------------------------------------------------------------
def test_kept_alive_requests_do_not_wait_on_a_delayed_ack(server: ModelServer, stub: Any) -> None:
    """20 Predicts over one kept-alive connection against the same 20 over gRPC.

    With the answer split in two writes and Nagle's algorithm on, each REST request waits
    ~40 ms for the client's delayed ACK, tens of times gRPC's latency on loopback.
    """
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "module"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.array([[1.0, 2.0]], np.float32)))
    connection = http.client.HTTPConnection(*host_port(server), timeout=30)

    def rest() -> None:
        connection.request("POST", PATH, BODY, {"Content-Type": "application/json"})
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read()) == EXPECTED

    def grpc_call() -> None:
        stub.Predict(request, timeout=30)

    def median_s(call: Any) -> float:
        call()  # warm: connection, model callable
        times = []
        for _ in range(20):
            began = time.perf_counter()
            call()
            times.append(time.perf_counter() - began)
        return statistics.median(times)

    try:
        rest_s, grpc_s = median_s(rest), median_s(grpc_call)
    finally:
        connection.close()
    assert rest_s < 10 * grpc_s, f"REST median {rest_s * 1e3:.1f} ms, gRPC {grpc_s * 1e3:.1f} ms"


# keep-alive and versions -------------------------------------------------------------------------
def test_http11_keeps_the_connection_and_frames_by_content_length(sock: socket.socket) -> None:
    reader = Reader(sock)
    sock.sendall(post(PATH, BODY) + post(PATH, b"{bad"))  # two requests in one write
    status, headers, body = reader.response()
    assert status == "HTTP/1.1 200 OK"
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert "connection" not in headers
    assert json.loads(body) == EXPECTED
    status, headers, body = reader.response()
    assert status == "HTTP/1.1 400 Bad Request"
    assert json.loads(body)["error"].startswith("JSON Parse error")
    sock.sendall(b"GET /v1/models/module HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    status, headers, body = reader.response()
    assert status == "HTTP/1.1 200 OK" and headers["connection"] == "close"
    assert json.loads(body)["model_version_status"]
    assert reader.closed()


def test_http10_closes_unless_asked_to_keep_alive(server: ModelServer) -> None:
    with socket.create_connection(host_port(server), timeout=30) as conn:
        reader = Reader(conn)
        conn.sendall(post(PATH, BODY, "HTTP/1.0", Connection="keep-alive"))
        _, headers, body = reader.response()
        assert headers["connection"] == "keep-alive" and json.loads(body) == EXPECTED
        conn.sendall(post(PATH, BODY, "HTTP/1.0"))
        _, headers, body = reader.response()
        assert json.loads(body) == EXPECTED
        assert reader.closed()


def test_errors_and_unknown_paths_carry_content_length(sock: socket.socket) -> None:
    reader = Reader(sock)
    sock.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
    status, _, _ = reader.response()
    assert status.startswith("HTTP/1.1 404")
    status, headers, body = reader.response()
    assert status.startswith("HTTP/1.1 400") and headers["content-type"] == "application/json"
    assert json.loads(body) == {"error": "Malformed request: GET /v1/nowhere"}


# request bodies ----------------------------------------------------------------------------------
def test_chunked_body_then_another_request_on_the_same_connection(sock: socket.socket) -> None:
    reader = Reader(sock)
    sock.sendall(post(PATH, chunked(BODY, 5, 1, len(BODY) - 6), Transfer_Encoding="chunked"))
    status, _, body = reader.response()
    assert status == "HTTP/1.1 200 OK" and json.loads(body) == EXPECTED
    sock.sendall(post(PATH, BODY))
    assert json.loads(reader.response()[2]) == EXPECTED


def test_bad_chunk_framing_is_400_and_closes(sock: socket.socket) -> None:
    reader = Reader(sock)
    sock.sendall(post(PATH, b"zz\r\n{}\r\n0\r\n\r\n", Transfer_Encoding="chunked"))
    status, headers, body = reader.response()
    assert status.startswith("HTTP/1.1 400") and headers["connection"] == "close"
    assert "chunk" in json.loads(body)["error"]
    assert reader.closed()


@pytest.mark.parametrize(
    ("head", "body", "status", "words"),
    [
        # RFC 9112 6.3: both framings in one request is how requests are smuggled
        (
            "Transfer-Encoding: chunked\r\nContent-Length: 6",
            chunked(b"{}", 2),
            "400",
            "both Transfer-Encoding and Content-Length",
        ),
        ("Transfer-Encoding: xchunked", chunked(b"{}", 2), "501", "only chunked"),
        ("Transfer-Encoding: gzip, chunked", chunked(b"{}", 2), "501", "only chunked"),
        ("Transfer-Encoding: chunked", b"0x2\r\n{}\r\n0\r\n\r\n", "400", "chunk size"),
        ("Transfer-Encoding: chunked", b"+2\r\n{}\r\n0\r\n\r\n", "400", "chunk size"),
        ("Transfer-Encoding: chunked", b" 2\r\n{}\r\n0\r\n\r\n", "400", "chunk size"),
        ("Transfer-Encoding: chunked", b"8000000000000000\r\n{}\r\n", "400", "too large"),
        ("Transfer-Encoding: chunked", b"7fffffffffffffff\r\n{}", "400", "inside a chunk"),
        ("Content-Length: \u00b2", b"{}", "400", "invalid Content-Length"),
        ("Content-Length: +2", b"{}", "400", "invalid Content-Length"),
        ("Content-Length: 2, 2", b"{}", "400", "invalid Content-Length"),
        ("Content-Length: 9223372036854775808", b"{}", "400", "too large"),
        ("Content-Length: 1" + "0" * 5000, b"{}", "400", "too large"),
    ],
    ids=[
        "both-framings",
        "xchunked",
        "gzip-chunked",
        "size-0x",
        "size-plus",
        "size-space",
        "size-2**63",
        "size-2**63-1-short",
        "length-superscript",
        "length-plus",
        "length-twice",
        "length-2**63",
        "length-5001-digits",
    ],
)
def test_body_framing_outside_rfc_9112_is_refused_and_closed(
    sock: socket.socket, head: str, body: bytes, status: str, words: str
) -> None:
    reader = Reader(sock)
    request = f"POST {PATH} HTTP/1.1\r\nHost: x\r\n{head}\r\n\r\n".encode("latin-1")
    sock.sendall(request + body)
    if "inside a chunk" in words:
        sock.shutdown(socket.SHUT_WR)  # the 2**63 - 1 bytes never come
    answer, headers, text = reader.response()
    assert answer.startswith(f"HTTP/1.1 {status}") and headers["connection"] == "close"
    assert words in json.loads(text)["error"]
    assert reader.closed()


def test_a_lone_surrogate_in_a_json_string_is_400(sock: socket.socket) -> None:
    reader = Reader(sock)
    for text, offset in [
        ('"\\ud800"', 13),
        ('"\\udc00"', 13),
        ('"\\ud800\\u0041"', 13),
        ('"\\\\ud800"', None),
        ('"\\ud83d\\ude00"', None),
    ]:
        body = ('{"inputs": [' + text + '], "signature_name": "strings"}').encode()
        sock.sendall(post("/v1/models/module:predict", body))
        status, _, answer = reader.response()
        if offset is None:  # a backslash then "ud800"; a pair (an emoji): plain strings
            assert status == "HTTP/1.1 200 OK", answer
            continue
        assert status == "HTTP/1.1 400 Bad Request"
        assert json.loads(answer) == {
            "error": (f"JSON Parse error: The surrogate pair in string is invalid. at offset: {offset}")
        }
    sock.sendall(post(PATH, BODY))  # the connection goes on
    assert json.loads(reader.response()[2]) == EXPECTED


def test_gzip_body_is_inflated(sock: socket.socket) -> None:
    reader = Reader(sock)
    sock.sendall(post(PATH, gzip.compress(BODY), Content_Encoding="gzip"))
    status, _, body = reader.response()
    assert status == "HTTP/1.1 200 OK" and json.loads(body) == EXPECTED


def test_expect_100_continue(sock: socket.socket) -> None:
    head = post(PATH, b"", Expect="100-continue")
    sock.sendall(head.replace(b"Content-Length: 0", b"Content-Length: %d" % len(BODY)))
    interim = sock.recv(4096)
    assert interim.startswith(b"HTTP/1.1 100 Continue\r\n")
    sock.sendall(BODY)
    reader = Reader(sock)
    reader.buffer = interim.split(b"\r\n\r\n", 1)[1]
    status, _, body = reader.response()
    assert status == "HTTP/1.1 200 OK" and json.loads(body) == EXPECTED


def test_header_names_and_values_in_any_case(sock: socket.socket) -> None:
    reader = Reader(sock)
    head = (
        f"POST {PATH} HTTP/1.1\r\nhost: x\r\nTRANSFER-ENCODING: Chunked\r\nconnection: Keep-Alive\r\n\r\n"
    ).encode()
    sock.sendall(head + chunked(BODY, len(BODY)))
    status, headers, body = reader.response()
    assert status == "HTTP/1.1 200 OK" and "connection" not in headers
    assert json.loads(body) == EXPECTED


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (b"NONSENSE\r\n\r\n", "HTTP/1.1 400"),
        (b"GET /v1/models/module HTTP/x.y\r\n\r\n", "HTTP/1.1 400"),
        (b"GET /v1/models/module HTTP/2.0\r\n\r\n", "HTTP/1.1 505"),
        (b"GET /v1/models/module HTTP/1.1\r\n" + b"X-A: b\r\n" * 101 + b"\r\n", "HTTP/1.1 431"),
        (b"BREW /v1/models/module HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 501"),
    ],
)
def test_malformed_heads_are_refused_and_closed(
    sock: socket.socket, request_head: bytes, status: str
) -> None:
    sock.sendall(request_head)
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    assert answer.startswith(status.encode()), answer[:80]


def test_stopping_the_server_ends_kept_alive_connections(module_base: Any) -> None:
    from tfship.server import ModelConfig

    options = ServerOptions(port=0, rest_port=0)
    server = ModelServer([ModelConfig("module", str(module_base))], options).start()
    try:
        conn = socket.create_connection(host_port(server), timeout=10)
        reader = Reader(conn)
        conn.sendall(post(PATH, BODY))
        assert json.loads(reader.response()[2]) == EXPECTED
    finally:
        server.stop()
    with conn:
        assert reader.closed()  # at once, not after the idle timeout


def test_a_client_hanging_up_mid_request_leaves_the_server_serving(
    server: ModelServer, capfd: pytest.CaptureFixture[str]
) -> None:
    with socket.create_connection(host_port(server), timeout=30) as conn:
        conn.sendall(post(PATH, BODY)[:-5])  # the body is 5 bytes short
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    time.sleep(0.2)
    with socket.create_connection(host_port(server), timeout=30) as conn:
        reader = Reader(conn)
        conn.sendall(post(PATH, BODY))
        assert json.loads(reader.response()[2]) == EXPECTED
    assert "Traceback" not in capfd.readouterr().err
