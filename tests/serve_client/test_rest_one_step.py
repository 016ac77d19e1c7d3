"""The REST client's short paths give what its full paths give: the request body written by
orjson at once is the checked writer's, byte for byte; a request written from header lines
kept by its connection is http.client's, byte for byte; and an answer read by one numpy step
is the array (or the error) of the per-value rules."""

from __future__ import annotations

import http.client
import re
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from tfship._wire import JsonError, answer_from_json
from tfship.serve_client._transports import _rest

NAN, INF = float("nan"), float("inf")
F32 = np.array([[0.1, 1e-8, 3.4e38, -0.0, 16777217.0]], np.float32)


@pytest.mark.parametrize(
    "body",
    [
        {"inputs": {"x": F32}},
        {"inputs": {"x": np.array([[0.1, 1 / 3, 1e300]]), "n": np.array([2**62 + 1], np.int64)}},
        {"inputs": {"x": np.array([[1.5, NAN]], np.float32)}},
        {"inputs": {"x": np.array([INF, -INF])}},
        {"inputs": {"x": np.float32(NAN)}},  # a 0-d input travels as a numpy scalar
        {"inputs": {"x": np.float32(2.5)}},
        {"inputs": {"x": [[1.0, NAN]]}, "signature_name": "s"},
        {"inputs": {"x": -INF}},
        {"inputs": {"x": ["null", {"b64": "/w=="}]}},  # "null" in the text, no NaN
        {"inputs": {"x": None}},
        {"inputs": {"x": np.array([[True, False]])}},
        {"inputs": {"x": np.zeros((0, 3), np.float32)}},
        {"inputs": {"x": np.arange(12.0).reshape(3, 4)[:, ::2]}},  # not contiguous
        {"inputs": {"x": np.array([1.5, 2.5], np.longdouble)}},  # orjson refuses it
        {"inputs": {"x": np.array([1.5, NAN], np.longdouble)}},
        {"inputs": {"x": {1, 2}}},
        {"examples": [{"f": [0.5, NAN]}], "context": {"g": [1]}},
    ],
)
def test_the_body_written_in_one_step_is_the_checked_writers(body: dict[str, Any]) -> None:
    assert _written(_rest._dumps, body) == _written(_rest._dumps_checked, body)


def _written(dumps: Callable[[dict[str, Any]], bytes], body: dict[str, Any]) -> bytes | tuple[type, str]:
    """The bytes, or the error and its words."""
    try:
        return dumps(body)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


def _outcome(value: Any, dtype: str, bool_free: bool) -> np.ndarray | JsonError:
    try:
        return answer_from_json(value, dtype, bool_free)
    except JsonError as exc:
        return exc


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        ([[0.25, 0.75, -0.5]], "float32"),
        ([[16777215.0, -16777215.0]], "float32"),
        ([16777216.0, 0.5], "float32"),  # at the limit: the long way, same answer
        ([[-16777216.0, 1]], "float32"),
        ([16777217, 0.5], "float32"),  # an integer float32 cannot hold: an error
        ([-16777217, 0.5], "float32"),
        ([[1e39, 1.0]], "float32"),
        ([NAN, 1.5], "float32"),
        ([[INF, -INF, 3.0]], "float32"),
        ([NAN, 16777217], "float32"),
        ([2**53 + 1, 0.5], "float64"),
        ([2**53 - 1, -0.5], "float64"),
        ([[NAN, 1e300]], "float64"),
        ([[1, 2], [3, 4]], "float32"),
        (0.5, "float32"),
        ([], "float32"),
    ],
)
def test_an_answer_read_in_one_step_is_the_per_value_rules(value: Any, dtype: str) -> None:
    exact, fast = _outcome(value, dtype, False), _outcome(value, dtype, True)
    if isinstance(exact, JsonError):
        assert isinstance(fast, JsonError) and (fast.code, fast.message) == (exact.code, exact.message)
        return
    assert isinstance(fast, np.ndarray)
    assert (fast.dtype, fast.shape) == (exact.dtype, exact.shape)
    np.testing.assert_array_equal(fast, exact)


class _Heads(socketserver.ThreadingTCPServer):
    """Records every request as received, byte for byte, and answers each with an empty 200."""

    daemon_threads = True
    allow_reuse_address = True
    received: list[bytes]


class _Recording(socketserver.StreamRequestHandler):
    server: _Heads

    def handle(self) -> None:
        while True:
            raw = b""
            while not raw.endswith(b"\r\n\r\n"):
                line = self.rfile.readline()
                if not line:
                    return
                raw += line
            length = re.search(rb"\r\ncontent-length: (\d+)\r\n", raw, re.IGNORECASE)
            raw += self.rfile.read(int(length.group(1))) if length else b""
            self.server.received.append(raw)
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def heads() -> Iterator[_Heads]:
    server = _Heads(("127.0.0.1", 0), _Recording)
    server.received = []
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("method", "url", "body", "headers"),
    [
        ("POST", "/v1/models/m:predict", b'{"inputs": [1.5]}', JSON),
        ("POST", "/v1/models/m:predict", None, JSON),
        ("GET", "/v1/models/m/metadata", None, {**JSON, "X-Token": "été", "Accept": "*/*"}),
        ("POST", "/v1/models/m:predict", b"{}", {}),
        ("POST", "/prefix/v1/models/m:predict", b"[]", {**JSON, "Host": "serving.example"}),
        ("POST", "/v1/models/m:predict", b"[]", {**JSON, "content-length": "2"}),
        ("POST", "/v1/models/m:predict", "{}", JSON),  # a str body: http.client's own path
    ],
)
def test_a_request_from_kept_header_lines_is_http_clients(
    heads: _Heads, method: str, url: str, body: Any, headers: dict[str, str]
) -> None:
    port = heads.server_address[1]
    ours = _rest._HttpConnection("127.0.0.1", port, timeout=10)
    theirs = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sent: dict[str, list[bytes]] = {}
    for name, send in (
        ("http.client", lambda: theirs.request(method, url, body=body, headers=headers)),
        ("kept lines", lambda: ours.send_request(method, url, body, headers)),
    ):
        heads.received = []
        for _ in range(3):  # the first request keeps the lines, the next ones use them
            send()
            connection = theirs if name == "http.client" else ours
            assert connection.getresponse().read() == b""
        sent[name] = heads.received
    ours.close()
    theirs.close()
    assert sent["kept lines"] == sent["http.client"]
    assert len(set(sent["http.client"])) == 1 and sent["http.client"][0].startswith(method.encode())


def _begun(cls: type[http.client.HTTPResponse], raw: bytes, method: str) -> tuple[Any, ...]:
    """What ``begin()`` of ``cls`` makes of an answer: its status, headers, framing and body,
    or its error and the error's words."""
    ours, peer = socket.socketpair()
    with ours, peer:
        peer.sendall(raw)
        peer.shutdown(socket.SHUT_WR)
        response = cls(ours, method=method)  # type: ignore[arg-type]
        try:
            response.begin()
            body = response.read()
        except (http.client.HTTPException, OSError, ValueError) as exc:
            return type(exc), str(exc)
        framing = (response.chunked, getattr(response, "chunk_left", None), response.will_close)
        headers = {**vars(response.headers), "defects": [type(d) for d in response.headers.defects]}
        return (response.status, response.reason, response.version, headers, framing, body)


OK = b"HTTP/1.1 200 OK\r\n"
MANY = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 200) for i in range(60))  # more than one read
ANSWERS = {
    "plain": OK + b"Content-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"y\": [0.5]}",
    "no headers": OK + b"\r\nuntil the end",
    "http 1.0": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}",
    "http 1.0, no keep-alive": b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
    "chunked": OK + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "chunked and a length": (
        OK + b"Transfer-Encoding: Chunked\r\nContent-Length: 9\r\n\r\n1\r\n[\r\n1\r\n]\r\n0\r\n\r\n"
    ),
    "closes": OK + b"Connection: close\r\nContent-Length: 2\r\n\r\n{}",
    "no content": b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
    "not modified": b"HTTP/1.1 304 Not Modified\r\n\r\n",
    "error": b"HTTP/1.1 404 Not Found\r\nContent-Length: 15\r\n\r\n{\"error\": \"x\"}",
    "continue first": b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"Content-Length: 2\r\n\r\n{}",
    "switching": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
    "odd spacing": (
        b"HTTP/1.1 200   All  good \r\nX-A:\t  spaced value  \r\nX-B:\r\nContent-Length: 0\r\n\r\n"
    ),
    "no reason": b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
    "twice": OK + b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\ncontent-length: 0\r\n\r\n",
    "folded": OK + b"X-Long: one\r\n two\r\nContent-Length: 0\r\n\r\n",
    "latin-1": OK + b"X-Name: caf\xe9\r\nContent-Length: 0\r\n\r\n",
    "bad length": OK + b"Content-Length: two\r\n\r\nuntil the end",
    "negative length": OK + b"Content-Length: -3\r\n\r\nuntil the end",
    "no colon": OK + b"Content-Length 0\r\n\r\n",
    "empty name": OK + b": x\r\nContent-Length: 0\r\n\r\n",
    "long head": OK + MANY + b"Content-Length: 0\r\n\r\n",
    "99 headers": OK + b"X: y\r\n" * 98 + b"Content-Length: 0\r\n\r\n",
    "100 headers": OK + b"X: y\r\n" * 99 + b"Content-Length: 0\r\n\r\n",
    "http 2": b"HTTP/2 200 OK\r\n\r\n",
    "not http": b"hello\r\n\r\n",
    "nothing": b"",
    "cut short": OK + b"Content-Length: 9\r\n\r\n{}",
}


@pytest.mark.parametrize("method", ["POST", "HEAD"])
@pytest.mark.parametrize("answer", list(ANSWERS), ids=list(ANSWERS))
def test_an_answer_head_read_without_the_email_parser_is_http_clients(answer: str, method: str) -> None:
    raw = ANSWERS[answer]
    assert _begun(_rest._Response, raw, method) == _begun(http.client.HTTPResponse, raw, method)
