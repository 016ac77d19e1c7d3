"""Transports: how a client's requests reach a serving peer (see ``_base``).

- ``_grpc``: TF Serving's gRPC API (``GrpcTransport``, ``AsyncGrpcTransport``);
- ``_rest``: its HTTP/JSON API on pooled connections (``RestTransport``, ``AsyncRestTransport``);
- ``_inprocess``: ``tfship.server``'s core in this process (``InProcessTransport``,
  ``AsyncInProcessTransport``).

Every other concern (validation, retries, the signature cache, batching, results) lives once
in the client.
"""

from __future__ import annotations

from tfship.serve_client._transports._base import AsyncTransport, Call, Transport
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
]
