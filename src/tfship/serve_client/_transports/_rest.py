"""The REST transports: TF Serving's HTTP/JSON API (``/v1/models/...``) over pooled connections.

Requests arrive as the same protobuf messages the gRPC transport sends and leave as JSON
bodies; JSON answers come back as the same response messages, so the client maps one kind of
answer (the mapping, with what REST itself lacks made up, is ``_rest_json``'s). There is no
MultiInference or config reload over REST.

Connections are kept open across calls: ``RestTransport`` sends each call through a pool of
the standard library's ``http.client`` connections (``_http_pool``), ``AsyncRestTransport``
through ``httpx.AsyncHTTPTransport``; environment proxies are ignored, as the gRPC transport
ignores them. The JSON of each call is ``_rest_json``'s, its bytes ``_rest_bodies``'.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import ssl
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from tfship.serve_client._errors import (
    DeadlineExceededError,
    InvalidInputError,
    MalformedResponseError,
    UnimplementedError,
)
from tfship.serve_client._options import Tls, TlsConfig, deadline_check, late, time_left
from tfship.serve_client._results import PredictOutputs
from tfship.serve_client._transports._base import Call, check_target
from tfship.serve_client._transports._http_pool import ConnectionPool
from tfship.serve_client._transports._rest_bodies import dumps, loads_slowly
from tfship.serve_client._transports._rest_errors import connection_error, http_error
from tfship.serve_client._transports._rest_json import (
    EmptyBatch,
    empty_batch_answer,
    rest_answer,
    rest_request,
)
from tfship.serve_client._transports._rest_tls import ssl_context

if TYPE_CHECKING:
    import httpx

__all__ = ["AsyncRestTransport", "RestTransport"]

logger = logging.getLogger("tfship.serve_client")

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

    def __init__(self, url: str, *, tls: Tls, headers: Mapping[str, str] | None) -> None:
        scheme = "https" if tls else "http"
        self.url = (url if "://" in url else f"{scheme}://{url}").rstrip("/")
        check_target(self.url)
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self._header_list = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        self._verify: ssl.SSLContext | bool = ssl_context(tls) if tls else True
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

    def _url(self, path: str) -> httpx.URL:
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
        except EmptyBatch:
            return empty_batch_answer(call)
        except TypeError as exc:  # a dtype JSON cannot carry
            raise InvalidInputError(f"{call.method} model {call.model!r}: {exc}", model=call.model) from None
        return verb, path, None if body is None else dumps(body)

    def _prepare(self, call: Call, deadline: float | None) -> httpx.Request | PredictOutputs:
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
        self,
        call: Call,
        method: str,
        url: httpx.URL | str,
        status: int,
        content: bytes,
        deadline: float | None,
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
            raise http_error(status, content, call.context)
        try:
            doc = orjson.loads(content)
        except orjson.JSONDecodeError:
            doc = loads_slowly(content, call)
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
        tls: Tls = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 16,
    ) -> None:
        super().__init__(url, tls=tls, headers=headers)
        context = self._verify if isinstance(self._verify, ssl.SSLContext) else None
        if tls and context is None:
            context = ssl.create_default_context()
        self._pool = ConnectionPool(self.url, context, self._extensions.get("sni_hostname"), max_connections)

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
            status, content = self._pool.request(verb, path, self.headers, body, deadline, call.context)
        except (OSError, http.client.HTTPException) as exc:
            raise connection_error(exc, call.context) from None
        return self._finish(call, verb, self.url + path, status, content, deadline)

    def close(self) -> None:
        """Close the kept-alive connections; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            self._pool.close()


class AsyncRestTransport(_RestBase):
    """:class:`RestTransport` on asyncio (``httpx.AsyncHTTPTransport``), for ``AsyncServingClient``."""

    def __init__(
        self,
        url: str,
        *,
        tls: Tls = None,
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
            raise connection_error(exc, call.context) from None
        return self._finish(call, request.method, request.url, response.status_code, content, deadline)

    async def aclose(self) -> None:
        """Close the kept-alive connections; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            await self._pool.aclose()


# What is left of a call's deadline, for each step of a transport's call.


def _left(deadline: float | None, call: Call, what: str = "waiting for the answer") -> float | None:
    """Seconds left before ``deadline``; DeadlineExceededError once it has passed."""
    return time_left(deadline, what, call.context)


def _late(call: Call, what: str) -> DeadlineExceededError:
    return late(what, call.context)


def _timeouts(deadline: float | None, call: Call) -> dict[str, float | None]:
    """httpx's timeouts of a request: every phase gets what is left of the deadline."""
    left = _left(deadline, call, "before the request was sent")
    return {"connect": left, "read": left, "write": left, "pool": left}
