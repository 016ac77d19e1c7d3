"""Transports: how a client's requests reach a serving peer (see ``_base``).

- ``_grpc``: TF Serving's gRPC API (``GrpcTransport``, ``AsyncGrpcTransport``);
- ``_rest``: its HTTP/JSON API on pooled connections (``RestTransport``, ``AsyncRestTransport``),
  on ``_http_pool`` (kept-alive HTTP/1.1 connections), ``_rest_json`` (messages to and from
  TF Serving's JSON), ``_rest_bodies`` (that JSON as bytes), ``_rest_tls`` and ``_rest_errors``;
- ``_inprocess``: ``tfship.server``'s core in this process (``InProcessTransport``,
  ``AsyncInProcessTransport``).

Every other concern (validation, retries, the signature cache, batching, results) lives once
in the client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from tfship.serve_client._options import Tls
from tfship.serve_client._transports._base import (
    AsyncTransport,
    Call,
    Transport,
    check_target,
    is_rest_url,
)
from tfship.serve_client._transports._grpc import AsyncGrpcTransport, GrpcTransport
from tfship.serve_client._transports._inprocess import AsyncInProcessTransport, InProcessTransport
from tfship.serve_client._transports._rest import AsyncRestTransport, RestTransport

__all__ = [
    "AsyncGrpcTransport",
    "AsyncInProcessTransport",
    "AsyncRestTransport",
    "AsyncTransport",
    "Call",
    "GrpcTransport",
    "InProcessTransport",
    "RestTransport",
    "Transport",
    "check_target",
    "is_rest_url",
    "transport_for",
]


@overload
def transport_for(
    target: str | None,
    *,
    asynchronous: Literal[False],
    tls: Tls,
    headers: Mapping[str, str] | None,
    max_message_bytes: int,
    options: Sequence[tuple[str, Any]],
    keepalive: float | None,
    max_connections: int,
) -> Transport: ...


@overload
def transport_for(
    target: str | None,
    *,
    asynchronous: Literal[True],
    tls: Tls,
    headers: Mapping[str, str] | None,
    max_message_bytes: int,
    options: Sequence[tuple[str, Any]],
    keepalive: float | None,
    max_connections: int,
) -> AsyncTransport: ...


def transport_for(
    target: str | None,
    *,
    asynchronous: bool,
    tls: Tls,
    headers: Mapping[str, str] | None,
    max_message_bytes: int,
    options: Sequence[tuple[str, Any]],
    keepalive: float | None,
    max_connections: int,
) -> Transport | AsyncTransport:
    """The transport a client's target names: ``http(s)://`` is REST, anything else gRPC."""
    if not target:
        raise ValueError("give a target (host:port, unix:PATH or http://host:port) or transport=")
    if is_rest_url(target):
        rest = AsyncRestTransport if asynchronous else RestTransport
        return rest(target, tls=tls, headers=headers, max_connections=max_connections)
    grpc_transport = AsyncGrpcTransport if asynchronous else GrpcTransport
    return grpc_transport(
        target,
        tls=tls,
        max_message_bytes=max_message_bytes,
        options=options,
        headers=headers,
        keepalive=keepalive,
    )


if TYPE_CHECKING:  # mypy checks that every transport keeps its side of the protocol

    def _sync(*transports: GrpcTransport | RestTransport | InProcessTransport) -> list[Transport]:
        return list(transports)

    def _async(
        *transports: AsyncGrpcTransport | AsyncRestTransport | AsyncInProcessTransport,
    ) -> list[AsyncTransport]:
        return list(transports)
