"""A REST call's failures as the client's errors: an HTTP error status with TF Serving's
``{"error": ...}`` body, and a connection that failed (timed out, refused, a TLS handshake)."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Mapping
from typing import Any

from tfship._wire import CODE_OF_HTTP
from tfship.serve_client._errors import ServingCallError, error_from_status

__all__ = ["connection_error", "http_error"]


def connection_error(exc: BaseException, context: Mapping[str, Any]) -> ServingCallError:
    if isinstance(exc, TimeoutError) or _is_httpx_timeout(exc):
        return error_from_status("DEADLINE_EXCEEDED", f"no answer in time ({exc})", **context)
    if isinstance(exc, http.client.IncompleteRead):
        return error_from_status(
            "UNAVAILABLE",
            f"the server closed the connection before the whole answer arrived ({exc})",
            **context,
        )
    tls = _ssl_cause(exc)
    if tls is not None:  # UNAVAILABLE with the handshake's words: a TlsError, never retried
        return error_from_status("UNAVAILABLE", str(tls), **context)
    return error_from_status("UNAVAILABLE", f"cannot connect: {exc}", **context)


def _is_httpx_timeout(exc: BaseException) -> bool:
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


def http_error(status: int, raw: bytes, context: Mapping[str, Any]) -> ServingCallError:
    try:
        message = str(json.loads(raw).get("error", ""))
    except (ValueError, AttributeError):
        message = raw.decode("utf-8", "replace")[:1024]
    code = CODE_OF_HTTP.get(status, "INTERNAL")
    return error_from_status(code, message or f"HTTP {status}", **context)
