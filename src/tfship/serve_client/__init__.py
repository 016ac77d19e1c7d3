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

Importing this package does not import TensorFlow, nor gRPC or httpx until a transport needs them.

Example:
    >>> import tensorflow as tf
    >>> m = tf.Module()
    >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
    >>> tf.saved_model.save(m, "m/1", signatures=m.f)
    >>> from tfship.server import ModelServer, ServerOptions
    >>> from tfship.serve_client import ServingClient
    >>> with ModelServer.from_base_path("m", "m", options=ServerOptions(port=0)) as server:
    ...     with ServingClient(server.address, timeout=10) as client:
    ...         client.predict("m", {"x": [[1.0, 2.0, 3.0]]}).as_numpy("y")
    array([[2., 4., 6.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

from tfship._deprecated import OldNames
from tfship._wire import decode_tensor, encode_tensor
from tfship.serve_client._aio import AsyncServingClient
from tfship.serve_client._batching import MicroBatchingOptions
from tfship.serve_client._client import RestServingClient, ServingClient
from tfship.serve_client._errors import (
    CallCancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    InvalidInputError,
    MalformedResponseError,
    MessageTooLargeError,
    ModelLoadFailedError,
    ModelNotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    ServerInternalError,
    ServingCallError,
    ServingSignatureNotFoundError,
    TlsError,
    UnavailableError,
    UnimplementedError,
    VersionNotFoundError,
)
from tfship.serve_client._options import DEFAULT, RetryPolicy, TlsConfig
from tfship.serve_client._results import (
    ClassifyResult,
    ModelMetadata,
    ModelSpec,
    MultiInferenceResult,
    PredictResult,
    RegressResult,
    VersionStatus,
)
from tfship.serve_client._transports import (
    AsyncGrpcTransport,
    AsyncInProcessTransport,
    AsyncRestTransport,
    GrpcTransport,
    InProcessTransport,
    RestTransport,
)

__all__ = [
    "AsyncGrpcTransport",
    "AsyncInProcessTransport",
    "AsyncRestTransport",
    "AsyncServingClient",
    "CallCancelledError",
    "ClassifyResult",
    "DEFAULT",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "GrpcTransport",
    "InProcessTransport",
    "InvalidInputError",
    "MalformedResponseError",
    "MessageTooLargeError",
    "MicroBatchingOptions",
    "ModelLoadFailedError",
    "ModelMetadata",
    "ModelNotFoundError",
    "ModelSpec",
    "MultiInferenceResult",
    "PermissionDeniedError",
    "PredictResult",
    "RegressResult",
    "ResourceExhaustedError",
    "RestServingClient",
    "RestTransport",
    "RetryPolicy",
    "ServerInternalError",
    "ServingCallError",
    "ServingClient",
    "ServingSignatureNotFoundError",
    "TlsConfig",
    "TlsError",
    "UnavailableError",
    "UnimplementedError",
    "VersionNotFoundError",
    "VersionStatus",
    "decode_tensor",
    "encode_tensor",
]

# Earlier spellings, still importable for now, not part of the surface.
_OLD = OldNames(
    __name__,
    renamed={
        "BatchingConfig": "tfship.serve_client.MicroBatchingOptions",
        "BatchingOptions": "tfship.serve_client.MicroBatchingOptions",
        "TLSConfig": "tfship.serve_client.TlsConfig",
    },
)


def __getattr__(name: str) -> Any:
    return _OLD.resolve(name)
