"""Call TensorFlow Serving (or ``tfship serve``, see ``tfship.server``) over gRPC, REST or in-process.

One client over transports: ``ServingClient`` (and ``AsyncServingClient`` on asyncio) sends
TF Serving's requests through a ``GrpcTransport`` (a ``host:port`` target), a
``RestTransport`` (an ``http://`` target; ``RestServingClient`` is the same client over it)
or an ``InProcessTransport`` (a ``tfship.server`` in this process). Whatever the transport:
typed results (``PredictResult.as_numpy``), a deadline on every call, retries with backoff on
``UNAVAILABLE``, validation against the served signature (fetched once, fetched again after a
rejected call), TLS and optional micro-batching; every failure is a ``ServingCallError``
subclass chosen from the status code. ``encode_tensor`` and ``decode_tensor`` convert between
numpy and ``TensorProto`` with TensorFlow's rules. Calls never import TensorFlow.

Importing this package is cheap: each name below loads its module on first use.

Example:
    >>> from tfship.serve_client import ServingClient
    >>> with ServingClient("127.0.0.1:8500", timeout=10) as client:  # doctest: +SKIP
    ...     client.predict("penguins", {"x": [[1.0, 2.0]]}).as_numpy("scores")
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "DEFAULT": "_options",
    "AsyncGrpcTransport": "_transports",
    "AsyncInProcessTransport": "_transports",
    "AsyncRestTransport": "_transports",
    "AsyncServingClient": "_aio",
    "BatchingConfig": "_batching",
    "CallCancelledError": "_errors",
    "ClassifyResult": "_results",
    "DeadlineExceededError": "_errors",
    "FailedPreconditionError": "_errors",
    "GrpcTransport": "_transports",
    "InProcessTransport": "_transports",
    "InvalidInputError": "_errors",
    "MalformedResponseError": "_errors",
    "MessageTooLargeError": "_errors",
    "ModelLoadFailedError": "_errors",
    "ModelMetadata": "_results",
    "ModelNotFoundError": "_errors",
    "ModelSpec": "_results",
    "MultiInferenceResult": "_results",
    "PermissionDeniedError": "_errors",
    "PredictResult": "_results",
    "RegressResult": "_results",
    "ResourceExhaustedError": "_errors",
    "RestServingClient": "_client",
    "RestTransport": "_transports",
    "RetryPolicy": "_options",
    "ServerInternalError": "_errors",
    "ServingCallError": "_errors",
    "ServingClient": "_client",
    "ServingSignatureNotFoundError": "_errors",
    "TlsConfig": "_options",
    "UnavailableError": "_errors",
    "UnimplementedError": "_errors",
    "VersionNotFoundError": "_errors",
    "VersionStatus": "_results",
    "decode_tensor": "tfship._wire",
    "encode_tensor": "tfship._wire",
}
# Earlier spellings, still importable, not part of the surface.
_RENAMED = {"TLSConfig": "TlsConfig"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(_RENAMED.get(name, name))
    if module is None:
        raise AttributeError(f"module 'tfship.serve_client' has no attribute {name!r}")
    full = module if module.startswith("tfship.") else f"tfship.serve_client.{module}"
    return getattr(importlib.import_module(full), _RENAMED.get(name, name))


def __dir__() -> list[str]:
    return __all__
