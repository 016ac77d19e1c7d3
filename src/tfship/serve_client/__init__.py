"""Call TensorFlow Serving (or ``tfship serve``, see ``tfship.server``) over gRPC or REST.

Importing this package is cheap: the gRPC stubs (which pull in TensorFlow's protos, hence
TensorFlow) load on first use of a name below.

Client side: ``ServingClient`` (gRPC; ``AsyncServingClient`` on asyncio and
``RestServingClient`` over HTTP/JSON have the same API) with typed results
(``PredictResult.as_numpy``), a deadline on every call, retries with backoff on
``UNAVAILABLE``, validation against the served signature, TLS, ``unix:`` targets and
optional micro-batching; ``encode_tensor`` and ``decode_tensor`` convert between numpy and
``TensorProto`` with TensorFlow's rules; every failure is a ``ServingCallError`` subclass
chosen from the gRPC status.

Example:
    >>> from tfship.serve_client import ServingClient
    >>> with ServingClient("127.0.0.1:8500", timeout=10) as client:  # doctest: +SKIP
    ...     client.predict("penguins", {"x": [[1.0, 2.0]]}).as_numpy("scores")
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> private module that defines it
_CLIENT_EXPORTS: dict[str, str] = {
    "DEFAULT": "_client",
    "AsyncServingClient": "_aio",
    "BatchingConfig": "_batching",
    "CallCancelledError": "_errors",
    "ClassifyResult": "_client",
    "DeadlineExceededError": "_errors",
    "FailedPreconditionError": "_errors",
    "InvalidInputError": "_errors",
    "MalformedResponseError": "_errors",
    "MessageTooLargeError": "_errors",
    "ModelLoadFailedError": "_errors",
    "ModelMetadata": "_client",
    "ModelNotFoundError": "_errors",
    "ModelSpec": "_client",
    "MultiInferenceResult": "_client",
    "PermissionDeniedError": "_errors",
    "PredictResult": "_client",
    "RegressResult": "_client",
    "ResourceExhaustedError": "_errors",
    "RestServingClient": "_rest",
    "RetryPolicy": "_client",
    "ServerInternalError": "_errors",
    "ServingCallError": "_errors",
    "ServingClient": "_client",
    "ServingSignatureNotFoundError": "_errors",
    "TLSConfig": "_client",
    "UnavailableError": "_errors",
    "UnimplementedError": "_errors",
    "VersionNotFoundError": "_errors",
    "VersionStatus": "_client",
    "decode_tensor": "tfship._wire",
    "encode_tensor": "tfship._wire",
}
_EXPORTS = _CLIENT_EXPORTS

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tfship.serve_client' has no attribute {name!r}")
    full = module if module.startswith("tfship.") else f"tfship.serve_client.{module}"
    return getattr(importlib.import_module(full), name)


def __dir__() -> list[str]:
    return __all__
