"""The REST transport's HTTP/1.1 connection pool against a real server on loopback.

The server is a plain TCP server that speaks just enough HTTP/1.1 to answer, and counts the
connections it accepts and the requests it holds at once, so each test sees from the server's
side what the pool did: a connection kept alive and used again, one dropped when the server
says or shows it closes, an answer cut short or too slow stopped within the deadline, and no
more connections in use than the pool's limit.
"""

from __future__ import annotations

import http.client
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tfship.serve_client import DeadlineExceededError, RestServingClient, UnavailableError
from tfship.serve_client._transports._http_pool import ConnectionPool

CONTEXT = {"model": "m", "version": None, "method": "Predict"}
HEADERS = {"Content-Type": "application/json"}


class Server:
    """A loopback HTTP/1.1 server whose answer depends on the path (see ``_answer``)."""

    def __init__(self) -> None:
        self.accepted = 0
        self.ended = 0  # connections whose client closed them
        self.holding = 0
        self.most_held = 0
        self.release = threading.Event()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                with owner.lock:
                    owner.accepted += 1
                    number = owner.accepted
                while not owner.stop.is_set():
                    request = _read_request(self.rfile)
                    if request is None:  # the client closed the connection
                        with owner.lock:
                            owner.ended += 1
                        return
                    path, body = request
                    if not owner._answer(self.connection, number, path, body):
                        return

        self.tcp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.tcp.daemon_threads = True
        self.port = self.tcp.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.tcp.serve_forever, daemon=True)
        self.thread.start()

    def _answer(self, sock: socket.socket, number: int, path: str, body: bytes) -> bool:
        """Answer one request; False when the connection ends after it."""
        text = f"{number}:{path}:{body.decode()}".encode()
        if path == "/echo":
            sock.sendall(_head(200, len(text)) + text)
            return True
        if path == "/close":  # says so: Connection: close
            sock.sendall(_head(200, len(text), b"Connection: close\r\n") + text)
            return False
        if path == "/drop":  # answers as if keeping the connection, then closes it unsaid
            sock.sendall(_head(200, len(text)) + text)
            sock.shutdown(socket.SHUT_RDWR)
            return False
        if path in ("/broken", "/v1/models/broken"):  # promises 100 bytes, sends 10, closes
            sock.sendall(_head(200, 100) + b"x" * 10)
            sock.shutdown(socket.SHUT_RDWR)
            return False
        if path == "/trickle":  # a byte every 50 ms of a 1000-byte body
            sock.sendall(_head(200, 1000))
            for _ in range(1000):
                if self.stop.wait(0.05):
                    return False
                sock.sendall(b"x")
            return True
        if path == "/silent":  # reads the request and never answers
            self.stop.wait(30)
            return False
        if path == "/hold":  # answers once released, counting the requests held at once
            with self.lock:
                self.holding += 1
                self.most_held = max(self.most_held, self.holding)
            self.release.wait(30)
            with self.lock:
                self.holding -= 1
            sock.sendall(_head(200, len(text)) + text)
            return True
        sock.sendall(_head(404, 0))
        return True

    def close(self) -> None:
        self.stop.set()
        self.release.set()
        self.tcp.shutdown()
        self.tcp.server_close()


def _head(status: int, length: int, extra: bytes = b"") -> bytes:
    reason = b"OK" if status == 200 else b"Not Found"
    return b"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n" % (
        status,
        reason,
        length,
        extra,
    )


def _read_request(stream: Any) -> tuple[str, bytes] | None:
    """(path, body) of the next request on ``stream``, or None at its end."""
    line = stream.readline()
    if not line:
        return None
    path = line.split()[1].decode()
    length = 0
    while True:
        header = stream.readline()
        if header in (b"\r\n", b""):
            break
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return path, stream.read(length)


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.close()


@pytest.fixture
def pool(server: Server) -> Iterator[ConnectionPool]:
    connections = ConnectionPool(server.url, None, None, 2)
    yield connections
    connections.close()


def _call(
    pool: ConnectionPool, path: str, body: bytes = b"", deadline: float | None = None
) -> tuple[int, bytes]:
    return pool.request("POST", path, HEADERS, body, deadline, CONTEXT)


def _within(seconds: float) -> float:
    return time.monotonic() + seconds


def test_one_connection_is_kept_alive_for_request_after_request(server: Server, pool: ConnectionPool) -> None:
    answers = [_call(pool, "/echo", b"%d" % n) for n in range(5)]
    assert answers == [(200, b"1:/echo:%d" % n) for n in range(5)]
    assert server.accepted == 1


def test_an_answer_of_another_status_keeps_the_connection_too(server: Server, pool: ConnectionPool) -> None:
    assert _call(pool, "/nowhere") == (404, b"")
    assert _call(pool, "/echo", b"a") == (200, b"1:/echo:a")
    assert server.accepted == 1


def test_a_connection_the_server_says_it_closes_is_not_used_again(
    server: Server, pool: ConnectionPool
) -> None:
    assert _call(pool, "/close", b"a") == (200, b"1:/close:a")
    assert _call(pool, "/echo", b"b") == (200, b"2:/echo:b")
    assert server.accepted == 2


@pytest.mark.parametrize("idle", [0.0, 1.0], ids=["at-once", "after-a-second"])
def test_a_connection_the_server_closed_unsaid_is_replaced(
    server: Server, pool: ConnectionPool, idle: float
) -> None:
    # At once, the request meets the closed connection and is sent once more on a new one;
    # a second later the pool sees the server's FIN before using it and connects anew.
    assert _call(pool, "/drop", b"a") == (200, b"1:/drop:a")
    time.sleep(idle)
    assert _call(pool, "/echo", b"b") == (200, b"2:/echo:b")
    assert server.accepted == 2


def test_an_answer_cut_short_is_an_error_and_the_pool_goes_on(server: Server, pool: ConnectionPool) -> None:
    with pytest.raises(http.client.IncompleteRead):
        _call(pool, "/broken")
    assert _call(pool, "/echo", b"a") == (200, b"2:/echo:a")


def test_the_client_says_an_answer_was_cut_short(server: Server) -> None:
    # not a MalformedResponseError about the ten bytes that came, as if they were the answer
    with RestServingClient(server.url, retries=0) as client:
        with pytest.raises(UnavailableError, match="closed the connection before the whole answer"):
            client.status("broken")


@pytest.mark.timing
@pytest.mark.parametrize("path", ["/trickle", "/silent"])
def test_a_slow_answer_is_stopped_at_the_deadline(server: Server, pool: ConnectionPool, path: str) -> None:
    started = time.monotonic()
    with pytest.raises((DeadlineExceededError, TimeoutError)):
        _call(pool, path, deadline=_within(0.5))
    elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 3.0, elapsed  # the trickle alone would take 50 s, silence forever
    assert _call(pool, "/echo", b"a", deadline=_within(10))[0] == 200  # its place is free again


def test_no_more_connections_than_the_limit_are_in_use(server: Server, pool: ConnectionPool) -> None:
    held = [threading.Thread(target=_call, args=(pool, "/hold")) for _ in range(2)]
    for thread in held:
        thread.start()
    deadline = _within(10)
    while server.most_held < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.most_held == 2
    # both of the limit's connections are in use: a third request waits for one, and its
    # deadline passes while it waits
    with pytest.raises(DeadlineExceededError, match="waiting for a connection"):
        _call(pool, "/echo", deadline=_within(0.3))
    answers: list[tuple[int, bytes]] = []
    waiting = threading.Thread(target=lambda: answers.append(_call(pool, "/echo", b"c")))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and server.accepted == 2
    server.release.set()
    for thread in [*held, waiting]:
        thread.join(10)
    assert answers and answers[0][0] == 200
    assert server.most_held == 2 and server.accepted == 2  # the third took a freed connection


def test_a_closed_pool_refuses_requests_and_closes_its_connections(
    server: Server, pool: ConnectionPool
) -> None:
    _call(pool, "/echo")
    pool.close()
    with pytest.raises(http.client.HTTPException, match="closed"):
        _call(pool, "/echo")
    # the idle connection was closed: the server reads the end of its stream
    deadline = _within(10)
    while server.ended < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.accepted == server.ended == 1
