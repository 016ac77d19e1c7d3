"""The REST transports: TF Serving's HTTP/JSON API (``/v1/models/...``) over pooled connections.

Requests arrive as the same protobuf messages the gRPC transport sends and leave as JSON
bodies; JSON answers come back as the same response messages, so the client maps one kind of
answer. Differences that come from REST itself: answers carry no ``model_spec`` (the servable
asked for is reported), ``output_filter`` is applied here, output dtypes (lost in JSON) come
from the signature the client passes along, and there is no MultiInference or config reload.

Connections are kept open across calls: ``RestTransport`` keeps a small pool of the standard
library's ``http.client`` connections (one request in one write, its unchanging header lines
written once per connection, plain answer heads read without the email parser, no per-call
objects beyond the connection's own), ``AsyncRestTransport`` uses ``httpx.AsyncHTTPTransport``;
environment proxies are ignored, as the gRPC transport ignores them.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import math
import re
import select
import ssl
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import numpy as np
import orjson

from tfship._wire import (
    CODE_OF_HTTP,
    DEFAULT_SIGNATURE,
    JsonError,
    answer_from_json,
    decode_tensor,
    example_to_json,
    protos,
    tensor_to_json,
)
from tfship.serve_client._errors import (
    DeadlineExceededError,
    InvalidInputError,
    MalformedResponseError,
    ServingCallError,
    UnimplementedError,
    error_from_status,
)
from tfship.serve_client._options import (
    CHECK_EVERY,
    DeadlineCheck,
    TlsConfig,
    deadline_check,
    late,
    time_left,
)
from tfship.serve_client._results import PredictOutputs
from tfship.serve_client._transports._base import Call, check_target

__all__ = ["AsyncRestTransport", "RestTransport"]

logger = logging.getLogger("tfship.serve_client")

_VERBS = {"Predict": ":predict", "Classify": ":classify", "Regress": ":regress"}
_NOT_IN_REST = {
    "MultiInference": "TF Serving's REST API has no MultiInference",
    "HandleReloadConfigRequest": "TF Serving's REST API cannot reload the model config",
}


class _RestBase:
    """What both REST transports keep: the base URL, headers, TLS and the JSON mapping.

    Requests go straight to a connection pool: a client's redirects, cookies and auth would
    only cost time on every call, and TF Serving uses none of them.
    """

    needs_signature = True
    takes_arrays = True
    _pool: Any

    def __init__(self, url: str, *, tls: Any, headers: Mapping[str, str] | None) -> None:
        scheme = "https" if tls else "http"
        self.url = (url if "://" in url else f"{scheme}://{url}").rstrip("/")
        check_target(self.url)
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self._header_list = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        self._verify: Any = _ssl_context(tls) if tls else True
        server_name = tls.server_name if isinstance(tls, TlsConfig) else None
        self._extensions = {"sni_hostname": server_name} if server_name else {}
        self._urls: dict[str, Any] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def _pool_options(self, max_connections: int) -> dict[str, Any]:
        import httpx

        return {
            "verify": self._verify,
            "trust_env": False,  # never through a proxy from the environment
            "limits": httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        }

    def _url(self, path: str) -> Any:
        url = self._urls.get(path)
        if url is None:
            import httpx

            url = httpx.URL(self.url + path)
            if len(self._urls) < 1024:  # paths are per model, version or label: few
                self._urls[path] = url
        return url

    def _encode(self, call: Call, deadline: float | None) -> tuple[str, str, bytes | None] | PredictOutputs:
        """(HTTP method, path, body) of ``call``, or the answer itself when REST cannot carry
        the request but its answer is known (an empty batch). Writing many examples as JSON
        stops once ``deadline`` passes."""
        if call.method in _NOT_IN_REST:
            raise UnimplementedError(
                f"{_NOT_IN_REST[call.method]}; use ServingClient over gRPC (a host:port target)",
                code="UNIMPLEMENTED",
                model=call.model,
            )
        try:
            check = deadline_check(deadline, call.context)
            verb, path, body = rest_request(call.method, call.request, call.inputs, check)
        except _EmptyBatch:
            return empty_batch_answer(call)
        except TypeError as exc:  # a dtype JSON cannot carry
            raise InvalidInputError(f"{call.method} model {call.model!r}: {exc}", model=call.model) from None
        return verb, path, None if body is None else _dumps(body)

    def _prepare(self, call: Call, deadline: float | None) -> Any:
        """The ``httpx.Request`` of ``call`` with what is left of its deadline, or the answer
        itself (see :meth:`_encode`)."""
        import httpx

        encoded = self._encode(call, deadline)
        if not isinstance(encoded, tuple):
            return encoded
        verb, path, body = encoded
        return httpx.Request(
            verb,
            self._url(path),
            headers=self._header_list,
            content=body,
            extensions={**self._extensions, "timeout": _timeouts(deadline, call)},
        )

    def _finish(
        self, call: Call, method: str, url: Any, status: int, content: bytes, deadline: float | None
    ) -> Any:
        """The answer of ``call`` from an HTTP status and body, or its ServingCallError; an
        answer decoded after the deadline is late like any other."""
        if logger.isEnabledFor(logging.DEBUG):  # in the words httpx's own client logs
            logger.debug('HTTP Request: %s %s "HTTP/1.1 %d"', method, url, status)
        answer = self._decode(call, status, content)
        _left(deadline, call, "while the answer was decoded")
        return answer

    def _decode(self, call: Call, status: int, content: bytes) -> Any:
        if status >= 400:
            raise _http_error(status, content, call.context)
        try:
            doc = orjson.loads(content)
        except orjson.JSONDecodeError:
            doc = _loads_slowly(content, call)
        try:
            bool_free = b"true" not in content and b"false" not in content
            return rest_answer(call, doc, bool_free)
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedResponseError(
                f"{call.method}: unexpected answer ({type(exc).__name__}: {exc}): {str(doc)[:200]}",
                model=call.model,
            ) from None


class RestTransport(_RestBase):
    """TF Serving's REST API over kept-alive HTTP connections, for :class:`ServingClient`.

    Args:
        url: ``http://host:port`` (``host:port`` is accepted; ``https`` when ``tls`` is set).
        tls: ``True`` (system roots) or a :class:`TlsConfig` (CA, client certificate for
            mutual TLS, server name).
        headers: HTTP headers sent with every call.
        max_connections: connections kept open to the server at most (one per concurrent call).

    Example:
        >>> client = ServingClient(transport=RestTransport("http://127.0.0.1:8501"))  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        tls: Any = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 16,
    ) -> None:
        super().__init__(url, tls=tls, headers=headers)
        context = self._verify if isinstance(self._verify, ssl.SSLContext) else None
        if tls and context is None:
            context = ssl.create_default_context()
        self._pool = _Connections(self.url, context, self._extensions.get("sni_hostname"), max_connections)

    def send(self, call: Call, timeout: float | None) -> Any:
        """Send one call within ``timeout`` seconds, all of it: encoding, connecting, sending,
        the server's time, receiving and decoding. HTTP and connection failures leave as
        ``ServingCallError`` subclasses."""
        deadline = None if timeout is None else time.monotonic() + timeout
        encoded = self._encode(call, deadline)
        if not isinstance(encoded, tuple):
            return encoded
        verb, path, body = encoded
        _left(deadline, call, "before the request was sent")
        try:
            status, content = self._pool.request(verb, path, self.headers, body, deadline, call)
        except (OSError, http.client.HTTPException) as exc:
            raise _connection_error(exc, call.context) from None
        return self._finish(call, verb, self.url + path, status, content, deadline)

    def close(self) -> None:
        """Close the kept-alive connections; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            self._pool.close()


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


class _HttpConnection(_OneWrite, http.client.HTTPConnection):  # type: ignore[misc]
    """``http.client``'s connection, writing each request at once and reading plain answer
    heads without the email parser."""

    response_class = _Response


class _HttpsConnection(_HttpConnection, http.client.HTTPSConnection):  # type: ignore[misc]
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


class _Connections:
    """Kept-alive HTTP/1.1 connections to one server, at most ``limit`` in use at once.

    A connection is taken for a whole request and answer, then put back unless the server
    said it closes it. One the server closed while it sat idle is dropped before use (it is
    readable: the server's FIN); a request that meets a connection closed in the meantime is
    sent once more on a new one, as nothing of it was answered.
    """

    def __init__(self, url: str, context: ssl.SSLContext | None, server_name: str | None, limit: int) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if context is not None else 80)
        self._prefix = parts.path
        self._context = context
        self._server_name = server_name
        self._idle: list[_HttpConnection] = []
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
        call: Call,
    ) -> tuple[int, bytes]:
        """Send one request and read its whole answer: (status, body)."""
        connection, reused = self._take(deadline, call)
        try:
            try:
                return self._exchange(connection, method, path, headers, body, deadline, call)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused:
                    raise
            connection.close()  # the server closed it while it was idle: once more, anew
            connection = self._connect(deadline, call)
            return self._exchange(connection, method, path, headers, body, deadline, call)
        except BaseException:
            connection.close()
            raise
        finally:
            self._put_back(connection)

    def _take(self, deadline: float | None, call: Call) -> tuple[_HttpConnection, bool]:
        """A connection to use, idle or new, once fewer than ``limit`` are in use."""
        with self._lock:
            while self._in_use >= self._limit and not self._closed:
                if not self._freed.wait(_left(deadline, call, "waiting for a connection")):
                    raise _late(call, "waiting for a connection")
            if self._closed:
                raise http.client.HTTPException("the client is closed")
            self._in_use += 1
            idle = self._idle
        try:
            while True:
                with self._lock:
                    connection = idle.pop() if idle else None
                if connection is None:
                    return self._connect(deadline, call), False
                if _lately_used(connection) or not _closed_by_peer(connection):
                    return connection, True
                connection.close()
        except BaseException:
            self._put_back(None)
            raise

    def _connect(self, deadline: float | None, call: Call) -> _HttpConnection:
        left = _left(deadline, call, "before the request was sent")
        if self._context is not None:
            return _HttpsConnection(
                self._host, self._port, timeout=left, context=self._context, server_name=self._server_name
            )
        return _HttpConnection(self._host, self._port, timeout=left)

    def _exchange(
        self,
        connection: _HttpConnection,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float | None,
        call: Call,
    ) -> tuple[int, bytes]:
        _timeout(connection, _left(deadline, call, "before the request was sent"))
        connection.send_request(method, self._prefix + path, body, headers)
        response = connection.getresponse()
        chunks = []
        while True:  # a slow body is stopped at the deadline
            _timeout(connection, _left(deadline, call, "while the answer was arriving"))
            chunk = response.read1(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            if response.length == 0:  # all of it: read1 would not say so by itself
                break
        response.close()  # the answer's reader only: the connection stays open
        if response.will_close:
            connection.close()
        return response.status, b"".join(chunks)

    def _put_back(self, connection: _HttpConnection | None) -> None:
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


class AsyncRestTransport(_RestBase):
    """:class:`RestTransport` on asyncio (``httpx.AsyncHTTPTransport``), for ``AsyncServingClient``."""

    def __init__(
        self,
        url: str,
        *,
        tls: Any = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 64,
    ) -> None:
        import httpx

        super().__init__(url, tls=tls, headers=headers)
        self._pool = httpx.AsyncHTTPTransport(**self._pool_options(max_connections))

    async def send(self, call: Call, timeout: float | None) -> Any:
        """Send one call within ``timeout`` seconds, all of it (see :meth:`RestTransport.send`)."""
        import httpx

        deadline = None if timeout is None else time.monotonic() + timeout
        request = self._prepare(call, deadline)
        if not isinstance(request, httpx.Request):
            return request
        try:
            async with asyncio.timeout(None if deadline is None else _left(deadline, call)):
                response = await self._pool.handle_async_request(request)
                try:
                    content = b"".join([chunk async for chunk in response.aiter_bytes()])
                finally:
                    await response.aclose()
        except TimeoutError:
            raise _late(call, "waiting for the answer") from None
        except httpx.HTTPError as exc:
            raise _connection_error(exc, call.context) from None
        return self._finish(call, request.method, request.url, response.status_code, content, deadline)

    async def aclose(self) -> None:
        """Close the kept-alive connections; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            await self._pool.aclose()


# ------------------------------------------------------------------ deadlines and bodies


def _left(deadline: float | None, call: Call, what: str = "waiting for the answer") -> float | None:
    """Seconds left before ``deadline``; DeadlineExceededError once it has passed."""
    return time_left(deadline, what, call.context)


def _late(call: Call, what: str) -> DeadlineExceededError:
    return late(what, call.context)


def _timeouts(deadline: float | None, call: Call) -> dict[str, float | None]:
    """httpx's timeouts of a request: every phase gets what is left of the deadline."""
    left = _left(deadline, call, "before the request was sent")
    return {"connect": left, "read": left, "write": left, "pool": left}


def _dumps(body: dict[str, Any]) -> bytes:
    """A request body as JSON: :func:`_dumps_checked`'s bytes, found in one step when orjson's
    text holds no ``null``. orjson writes every NaN or infinity as ``null``, so a body
    without one had none, and is the text the check would have let orjson write."""
    try:
        text = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # JSONEncodeError, or a numpy dtype orjson cannot write: as the check says
        return _dumps_checked(body)
    return text if b"null" not in text else _dumps_checked(body)


def _dumps_checked(body: dict[str, Any]) -> bytes:
    """A request body as JSON, written by orjson in C (numeric arrays included); through
    ``json`` when a value is NaN or infinite, which orjson would write as ``null`` and TF
    Serving reads as ``NaN``/``Infinity``."""
    if _finite(body):
        try:
            return orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
        except orjson.JSONEncodeError:
            pass  # an array orjson cannot write: the slow path says what is wrong with it
    return json.dumps(body, default=_plain).encode("utf-8")


def _finite(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind != "f" or bool(np.isfinite(value).all())
    if isinstance(value, (float, np.floating)):  # a numpy float32 scalar is not a float
        return math.isfinite(value)
    if isinstance(value, (dict, list)):
        for item in value.values() if isinstance(value, dict) else value:
            if not _finite(item):
                return False
    return True


def _plain(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return tensor_to_json(np.asarray(value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def _loads_slowly(content: bytes, call: Call) -> Any:
    """Answers orjson refuses: ``NaN``/``Infinity`` (which TF Serving writes), or not JSON."""
    try:
        return json.loads(content)
    except ValueError:
        raise MalformedResponseError(
            f"{call.method}: the answer is not JSON: {content[:200]!r}", model=call.model
        ) from None


# ------------------------------------------------------------------------ TLS and errors


def _ssl_context(tls: Any) -> ssl.SSLContext:
    if tls is True:
        return ssl.create_default_context()
    if not isinstance(tls, TlsConfig):
        raise TypeError(f"tls must be True or a TlsConfig for REST, got {tls!r}")
    ca = tls.ca_cert
    if isinstance(ca, bytes):
        context = ssl.create_default_context(cadata=ca.decode("ascii"))
    else:
        context = ssl.create_default_context(cafile=None if ca is None else str(ca))
    if tls.client_cert is not None and tls.client_key is not None:
        _load_client_cert(context, tls.client_cert, tls.client_key)
    return context


def _load_client_cert(context: ssl.SSLContext, cert: bytes | str | Path, key: bytes | str | Path) -> None:
    """Load a client certificate given as paths or PEM bytes (ssl reads only files)."""
    if not isinstance(cert, bytes) and not isinstance(key, bytes):
        context.load_cert_chain(str(cert), str(key))
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, value in (("cert.pem", cert), ("key.pem", key)):
            path = Path(tmp) / name
            path.write_bytes(value if isinstance(value, bytes) else Path(value).read_bytes())
            paths.append(str(path))
        context.load_cert_chain(paths[0], paths[1])


def _connection_error(exc: Any, context: Mapping[str, Any]) -> ServingCallError:
    if isinstance(exc, TimeoutError) or _is_httpx_timeout(exc):
        return error_from_status("DEADLINE_EXCEEDED", f"no answer in time ({exc})", **context)
    tls = _ssl_cause(exc)
    if tls is not None:  # UNAVAILABLE with the handshake's words: a TlsError, never retried
        return error_from_status("UNAVAILABLE", str(tls), **context)
    return error_from_status("UNAVAILABLE", f"cannot connect: {exc}", **context)


def _is_httpx_timeout(exc: Any) -> bool:
    if not type(exc).__module__.startswith("httpx"):
        return False
    import httpx

    return isinstance(exc, httpx.TimeoutException)


def _ssl_cause(exc: BaseException) -> ssl.SSLError | None:
    """The ``ssl.SSLError`` behind a connection failure, if that is what it is."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _http_error(status: int, raw: bytes, context: Mapping[str, Any]) -> ServingCallError:
    try:
        message = str(json.loads(raw).get("error", ""))
    except (ValueError, AttributeError):
        message = raw.decode("utf-8", "replace")[:1024]
    code = CODE_OF_HTTP.get(status, "INTERNAL")
    return error_from_status(code, message or f"HTTP {status}", **context)


# ------------------------------------------------------------- requests to JSON bodies


def rest_request(
    method: str, request: Any, inputs: Mapping[str, Any] | None = None, check: DeadlineCheck | None = None
) -> tuple[str, str, dict[str, Any] | None]:
    """(HTTP method, path, JSON body) of TF Serving's REST call for a request message (a
    Predict's ``inputs`` as arrays, when the request does not hold them); ``check`` is called
    now and then while examples are written (it raises once the call's deadline passed).

    Example:
        >>> from tfship.serve_client._calls import status_request
        >>> rest_request("GetModelStatus", status_request("m", version=3))
        ('GET', '/v1/models/m/versions/3', None)
    """
    path = model_path(request.model_spec)
    if method == "GetModelStatus":
        return "GET", path, None
    if method == "GetModelMetadata":
        return "GET", path + "/metadata", None
    if method == "Predict":
        arrays = inputs if inputs is not None else {k: decode_tensor(t) for k, t in request.inputs.items()}
        body = {"inputs": {k: _json_tensor(a) for k, a in arrays.items()}}
    else:
        body = _examples_body(request.input, check)
    if request.model_spec.signature_name:
        body["signature_name"] = request.model_spec.signature_name
    return "POST", path + _VERBS[method], body


class _EmptyBatch(Exception):
    """A Predict input has no rows: JSON writes ``[]`` for any such shape, and TF Serving
    would read a tensor of shape ``[0]``."""


def _json_tensor(array: np.ndarray[Any, Any]) -> Any:
    """A request tensor for the body: numeric arrays stay arrays (written by orjson in C),
    strings become text or ``{"b64": ...}``; an empty tensor JSON cannot shape is refused."""
    if 0 in array.shape[:-1]:
        raise _EmptyBatch()
    kind = array.dtype.kind
    if kind in "biu" or (kind == "f" and array.dtype.itemsize >= 4):
        # a scalar stays a scalar (numpy's, so float32 keeps its shortest text)
        return array[()] if array.ndim == 0 else np.ascontiguousarray(array)
    return tensor_to_json(array)


def empty_batch_answer(call: Call) -> PredictOutputs:
    """The answer to a Predict of zero rows, which REST cannot send: every output with zero
    rows, as TF Serving answers it over gRPC, shaped by the signature (``[?, 3]`` -> ``(0, 3)``).

    Raises:
        InvalidInputError: an output's shape beyond its rows is unknown, so the answer is too.
    """
    where = f"Predict model {call.model!r}"
    if call.inputs is not None:
        shapes = {key: tuple(np.shape(a)) for key, a in call.inputs.items()}
    else:
        shapes = {key: tuple(d.size for d in t.tensor_shape.dim) for key, t in call.request.inputs.items()}
    sig = call.signature
    if sig is None or any(shape[:1] != (0,) for shape in shapes.values()):
        raise InvalidInputError(
            f"{where}: inputs {shapes} hold no values, and REST cannot send their shapes (JSON "
            "writes [] for all of them); send at least one row, or call over gRPC",
            model=call.model,
        )
    wanted = list(call.request.output_filter) or list(sig.outputs)
    outputs = {}
    for key in wanted:
        info = sig.outputs[key]
        shape = info.shape
        if (
            shape is None
            or not shape
            or shape[0] not in (None, -1)
            or any(d is None or d < 0 for d in shape[1:])
        ):
            raise InvalidInputError(
                f"{where}: an empty batch cannot be sent over REST (JSON keeps no shape for "
                f"{shapes}) and output {key!r} of shape {list(shape or [])} cannot be answered "
                "without the server; send at least one row, or call over gRPC",
                model=call.model,
            )
        outputs[key] = np.zeros((0, *shape[1:]), dtype=_numpy_dtype(info.dtype))
    return PredictOutputs(outputs, asked_spec(call.request.model_spec), {"outputs": {}})


def _numpy_dtype(name: str) -> Any:
    return object if name == "string" else np.dtype(name)


def model_path(spec: Any) -> str:
    """``/v1/models/NAME[/versions/N | /labels/LABEL]`` for a ``ModelSpec``."""
    version = spec.version.value if spec.HasField("version") else None
    key = (spec.name, version, spec.version_label)
    path = _PATHS.get(key)
    if path is None:
        path = f"/v1/models/{quote(spec.name, safe='')}"
        if version is not None:
            path += f"/versions/{version}"
        elif spec.version_label:
            path += f"/labels/{quote(spec.version_label, safe='')}"
        if len(_PATHS) < 1024:  # names, versions and labels a process calls: few
            _PATHS[key] = path
    return path


_PATHS: dict[tuple[str, int | None, str], str] = {}


def _examples_body(input_message: Any, check: DeadlineCheck | None = None) -> dict[str, Any]:
    kind = input_message.WhichOneof("kind")
    if kind == "example_list_with_context":
        listed = input_message.example_list_with_context
        return {
            "examples": _examples_json(listed.examples, check),
            "context": example_to_json(listed.context),
        }
    return {"examples": _examples_json(input_message.example_list.examples, check)}


def _examples_json(examples: Any, check: DeadlineCheck | None) -> list[Any]:
    """Each Example as its JSON object; ``check`` every ``CHECK_EVERY`` examples."""
    if check is None:
        return [example_to_json(e) for e in examples]
    written = []
    for number, example in enumerate(examples):
        if number % CHECK_EVERY == 0:
            check("while the request was written as JSON")
        written.append(example_to_json(example))
    return written


# ------------------------------------------------------------ JSON answers to responses


def rest_answer(call: Call, doc: Any, bool_free: bool = False) -> Any:
    """The response message (Predict: ``PredictOutputs``) for a JSON answer to ``call``;
    ``bool_free``: the body holds no ``true``/``false``, so numbers may be read in one step."""
    if call.method == "GetModelStatus":
        return _status_response(doc)
    if call.method == "GetModelMetadata":
        return _metadata_response(doc)
    spec = asked_spec(call.request.model_spec)
    if call.method == "Predict":
        outputs = _outputs_from_json(doc.get("outputs"), call.signature, bool_free)
        wanted = list(call.request.output_filter)
        if wanted:  # TF Serving's REST API has no output filter: every output comes back
            outputs = {k: outputs[k] for k in wanted if k in outputs}
        return PredictOutputs(outputs, spec, doc)
    if call.method == "Classify":
        return _classify_response(doc, spec)
    return _regress_response(doc, spec)


def asked_spec(spec: Any) -> Any:
    """The servable asked for, standing in for the ``model_spec`` REST answers lack."""
    answered = protos().model_pb2.ModelSpec()
    answered.CopyFrom(spec)
    answered.signature_name = spec.signature_name or DEFAULT_SIGNATURE
    return answered


def _status_response(doc: Any) -> Any:
    from google.protobuf import json_format

    response = protos().get_model_status_pb2.GetModelStatusResponse()
    json_format.ParseDict(doc, response, ignore_unknown_fields=True)
    return response


def _metadata_response(doc: Any) -> Any:
    from google.protobuf import json_format

    pb = protos()
    response = pb.get_model_metadata_pb2.GetModelMetadataResponse()
    json_format.ParseDict(doc.get("model_spec", {}), response.model_spec, ignore_unknown_fields=True)
    signatures = pb.get_model_metadata_pb2.SignatureDefMap()
    json_format.ParseDict(
        doc.get("metadata", {}).get("signature_def", {}), signatures, ignore_unknown_fields=True
    )
    response.metadata["signature_def"].Pack(signatures)
    return response


def _classify_response(doc: Any, spec: Any) -> Any:
    response = protos().classification_pb2.ClassificationResponse()
    response.model_spec.CopyFrom(spec)
    for row in doc["results"]:
        classes = response.result.classifications.add().classes
        for label, score in row:
            classes.add(label=str(label), score=float(score))
    return response


def _regress_response(doc: Any, spec: Any) -> Any:
    response = protos().regression_pb2.RegressionResponse()
    response.model_spec.CopyFrom(spec)
    for value in np.asarray(doc["results"], dtype=np.float64).reshape(-1):
        response.result.regressions.add(value=float(value))
    return response


def _outputs_from_json(value: Any, sig: Any, bool_free: bool) -> dict[str, np.ndarray[Any, Any]]:
    names = [] if sig is None else list(sig.outputs)
    if not isinstance(value, dict) or (len(names) == 1 and names[0] not in value):
        value = {names[0] if names else "outputs": value}
    table = {} if sig is None else sig.outputs
    return {key: _array(item, table.get(key), bool_free) for key, item in value.items()}


def _array(value: Any, info: Any, bool_free: bool) -> np.ndarray[Any, Any]:
    try:
        return answer_from_json(value, getattr(info, "dtype", None), bool_free)
    except JsonError as exc:
        raise MalformedResponseError(f"the REST answer's output does not fit its signature: {exc}") from None
