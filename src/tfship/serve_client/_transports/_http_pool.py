"""Kept-alive HTTP/1.1 connections to one server, on the standard library's ``http.client``.

:class:`ConnectionPool` keeps at most ``limit`` connections in use at once and the idle ones
open for the next request; every connect, write and read gets what is left of the call's
deadline. Its connections write a request in one write, its header lines that do not change
checked and written once per connection, and read a plain answer head without the email
parser (``http.client`` would parse it, several times slower for a small answer). The REST
transport (``_rest``) sends each call through one.
"""

from __future__ import annotations

import http.client
import re
import select
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from tfship.serve_client._options import late, time_left

__all__ = ["ConnectionPool", "HttpConnection", "HttpsConnection"]

# Headers http.client writes itself unless given: a request naming one takes its general path.
_OWN_HEADERS = frozenset({"host", "accept-encoding", "content-length", "transfer-encoding"})


class _OneWrite:
    """Headers and body leave in one write: ``http.client`` writes them apart, and the server
    then wakes twice per request (and, without TCP_NODELAY on its side, may wait for an ACK).

    :meth:`send_request` is ``request()`` with the same bytes, its header lines that are the
    same on every request (``Host``, ``Accept-Encoding`` and the caller's) checked and written
    once per connection instead of on every request.
    """

    _buffer: list[bytes]  # http.client's, of the class this is mixed into
    # (the caller's headers, the Host and Accept-Encoding lines, the caller's header lines)
    _kept_head: tuple[tuple[tuple[str, str], ...], list[bytes], list[bytes]] | None = None

    def send_request(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]) -> None:
        """``request(method, url, body, headers)``: the same request, the same bytes."""
        conn: Any = self  # an http.client connection, by the class this is mixed into
        key = tuple(headers.items())
        kept = self._kept_head
        if kept is not None and kept[0] == key and (body is None or type(body) is bytes):
            conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
            buffer = self._buffer
            buffer += kept[1]
            length = conn._get_content_length(body, method)
            if length is not None:
                buffer.append(b"Content-Length: %d" % length)
            buffer += kept[2]
            conn.endheaders(body)
            return
        if (
            url[:1] != "/"
            or not (body is None or type(body) is bytes)
            or any(name.lower() in _OWN_HEADERS for name in headers)
        ):
            conn.request(method, url, body=body, headers=dict(headers))
            return
        # http.client's _send_request for these requests, keeping the lines that do not change
        conn.putrequest(method, url)
        fixed = self._buffer[1:]
        length = conn._get_content_length(body, method)
        if length is not None:
            conn.putheader("Content-Length", str(length))
        start = len(self._buffer)
        for name, value in headers.items():
            conn.putheader(name, value)
        self._kept_head = (key, fixed, self._buffer[start:])
        conn.endheaders(body)

    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        if not isinstance(message_body, bytes) or encode_chunked:
            super()._send_output(message_body, encode_chunked)  # type: ignore[misc]
            return
        self._buffer.extend((b"", b""))
        head = b"\r\n".join(self._buffer)
        del self._buffer[:]
        self.send(head + message_body)  # type: ignore[attr-defined]


# The lines of a plain answer head (see _Response): a status line of HTTP/1.0 or 1.1 with a
# final status, and header lines of printable ASCII, none folded.
_STATUS_LINE = re.compile(rb"(HTTP/1\.[01]) ([2-9][0-9][0-9]) ([ -~\t]*)\r\n")
_HEADER_LINE = re.compile(rb"([!-9;-~]+):[ \t]*([ -~\t]*)")


class _Response(http.client.HTTPResponse):
    """``http.client``'s response, its head read without the email parser when it is a plain
    one (see :meth:`_plain_head`): the same status, headers and body framing as ``begin()``
    sets, which costs several times more for a small answer. Any other head is ``begin()``'s."""

    def begin(self) -> None:
        if self.headers is not None or self.debuglevel or not self._plain_head():
            super().begin()

    def _plain_head(self) -> bool:
        """Read the head when all of it has arrived and it is plain: an HTTP/1.0 or 1.1 status
        line with a final status, and at most 99 header lines (``begin()`` refuses more) of
        ``Name: value`` in printable ASCII, none folded. Otherwise read nothing: False."""
        data = self.fp.peek()
        end = data.find(b"\r\n\r\n")
        status = _STATUS_LINE.match(data) if end >= 0 else None
        if status is None:
            return False
        lines = data[status.end() : end].split(b"\r\n") if end >= status.end() else []
        if len(lines) > 99:
            return False
        headers = http.client.HTTPMessage()
        for line in lines:
            header = _HEADER_LINE.fullmatch(line)
            if header is None:
                return False
            headers.set_raw(header[1].decode("ascii"), header[2].decode("ascii"))
        headers.set_payload("")
        self.fp.read(end + 4)
        version = status[1]
        self.code = self.status = int(status[2])
        self.reason = status[3].decode("ascii").strip()
        self.version = 10 if version == b"HTTP/1.0" else 11
        self.headers = self.msg = headers
        self._framing()
        return True

    def _framing(self) -> None:
        """``begin()``'s reading of the headers once parsed: chunked or not, the length, and
        whether the connection closes after this answer (the same lines as Python 3.9-3.13)."""
        tr_enc = self.headers.get("transfer-encoding")
        if tr_enc and tr_enc.lower() == "chunked":
            self.chunked = True
            self.chunk_left = None
        else:
            self.chunked = False
        self.will_close = self._check_close()  # type: ignore[attr-defined]
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:  # ignore nonsensical negative lengths
                    self.length = None
        else:
            self.length = None
        if self.status in (204, 304) or 100 <= self.status < 200 or self._method == "HEAD":  # type: ignore[attr-defined]
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


class HttpConnection(_OneWrite, http.client.HTTPConnection):  # type: ignore[misc]
    """``http.client``'s connection, writing each request at once and reading plain answer
    heads without the email parser."""

    response_class = _Response


class HttpsConnection(HttpConnection, http.client.HTTPSConnection):  # type: ignore[misc]
    """``http.client``'s HTTPS connection, writing each request at once and naming
    ``server_name`` in the handshake (SNI and the certificate check) instead of the host it
    connects to, when one is given."""

    def __init__(
        self, host: str, port: int, *, timeout: float | None, context: ssl.SSLContext, server_name: str | None
    ) -> None:
        http.client.HTTPSConnection.__init__(self, host, port, timeout=timeout, context=context)
        self._server_name = server_name
        self._tls_context = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._tls_context.wrap_socket(self.sock, server_hostname=self._server_name or self.host)


class ConnectionPool:
    """Kept-alive HTTP/1.1 connections to one server, at most ``limit`` in use at once.

    A connection is taken for a whole request and answer, then put back unless the server
    said it closes it. One the server closed while it sat idle is dropped before use (it is
    readable: the server's FIN); a request that meets a connection closed in the meantime is
    sent once more on a new one, as nothing of it was answered.

    ``deadline`` is a ``time.monotonic()`` instant; once it passes, a request raises the
    call's ``DeadlineExceededError``, named by ``context`` (``Call.context``).
    """

    def __init__(self, url: str, context: ssl.SSLContext | None, server_name: str | None, limit: int) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if context is not None else 80)
        self._prefix = parts.path
        self._context = context
        self._server_name = server_name
        self._idle: list[HttpConnection] = []
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._limit = limit
        self._in_use = 0
        self._closed = False

    def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float | None,
        context: Mapping[str, Any],
    ) -> tuple[int, bytes]:
        """Send one request and read its whole answer: (status, body)."""
        connection, reused = self._take(deadline, context)
        try:
            try:
                return self._exchange(connection, method, path, headers, body, deadline, context)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused:
                    raise
            connection.close()  # the server closed it while it was idle: once more, anew
            connection = self._connect(deadline, context)
            return self._exchange(connection, method, path, headers, body, deadline, context)
        except BaseException:
            connection.close()
            raise
        finally:
            self._put_back(connection)

    def _take(self, deadline: float | None, context: Mapping[str, Any]) -> tuple[HttpConnection, bool]:
        """A connection to use, idle or new, once fewer than ``limit`` are in use."""
        with self._lock:
            while self._in_use >= self._limit and not self._closed:
                if not self._freed.wait(time_left(deadline, "waiting for a connection", context)):
                    raise late("waiting for a connection", context)
            if self._closed:
                raise http.client.HTTPException("the client is closed")
            self._in_use += 1
            idle = self._idle
        try:
            while True:
                with self._lock:
                    connection = idle.pop() if idle else None
                if connection is None:
                    return self._connect(deadline, context), False
                if _lately_used(connection) or not _closed_by_peer(connection):
                    return connection, True
                connection.close()
        except BaseException:
            self._put_back(None)
            raise

    def _connect(self, deadline: float | None, context: Mapping[str, Any]) -> HttpConnection:
        left = time_left(deadline, "before the request was sent", context)
        if self._context is not None:
            return HttpsConnection(
                self._host, self._port, timeout=left, context=self._context, server_name=self._server_name
            )
        return HttpConnection(self._host, self._port, timeout=left)

    def _exchange(
        self,
        connection: HttpConnection,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float | None,
        context: Mapping[str, Any],
    ) -> tuple[int, bytes]:
        _timeout(connection, time_left(deadline, "before the request was sent", context))
        connection.send_request(method, self._prefix + path, body, headers)
        response = connection.getresponse()
        chunks = []
        while True:  # a slow body is stopped at the deadline
            _timeout(connection, time_left(deadline, "while the answer was arriving", context))
            chunk = response.read1(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            if response.length == 0:  # all of it: read1 would not say so by itself
                break
        if response.length:  # the server closed before the whole body it announced
            raise http.client.IncompleteRead(b"".join(chunks), response.length)
        response.close()  # the answer's reader only: the connection stays open
        if response.will_close:
            connection.close()
        return response.status, b"".join(chunks)

    def _put_back(self, connection: HttpConnection | None) -> None:
        """The end of a use: an open connection is kept for the next one (unless the pool
        is closed), and a waiting caller may take its place."""
        keep = connection is not None and connection.sock is not None
        with self._lock:
            self._in_use -= 1
            self._freed.notify()
            if keep and not self._closed:
                connection.idle_since = time.monotonic()  # type: ignore[union-attr]
                self._idle.append(connection)  # type: ignore[arg-type]
                return
        if connection is not None:
            connection.close()

    def close(self) -> None:
        """Close the idle connections now and each one in use when its request ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _timeout(connection: http.client.HTTPConnection, seconds: float | None) -> None:
    """What is left of the deadline, for the next connect, write or read of ``connection``.

    A socket whose timeout ends less than a millisecond after the deadline keeps it: setting
    it is a system call, and a small answer's headers and body come within that millisecond.
    """
    current = connection.timeout
    if (
        seconds is not None
        and isinstance(current, float)
        and connection.sock is not None
        and 0.0 <= current - seconds < 1e-3
    ):
        return
    connection.timeout = seconds
    if connection.sock is not None:
        connection.sock.settimeout(seconds)


# A connection put back this recently is used without asking the system whether the server
# closed it: servers close idle connections after seconds, and one closed even so is met by
# the request's single retry on a new connection, as one closed during the request is.
_FRESH_SECONDS = 0.5


def _lately_used(connection: http.client.HTTPConnection) -> bool:
    since: float | None = getattr(connection, "idle_since", None)
    return since is not None and time.monotonic() - since < _FRESH_SECONDS


def _closed_by_peer(connection: http.client.HTTPConnection) -> bool:
    """An idle connection that is readable was closed by the server (or is broken)."""
    sock = connection.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
