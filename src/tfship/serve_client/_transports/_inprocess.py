"""The in-process transport: the client's requests answered by ``tfship.server``'s core directly.

No socket, no serialization of requests: the same messages, the same status codes and texts
as over gRPC, for tests and notebooks. Predict answers are serialized once so they take the
same decoding path as over the wire.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, Union, cast

from tfship._wire import (
    ClassificationRequest,
    ClassificationResponse,
    GetModelMetadataRequest,
    GetModelMetadataResponse,
    GetModelStatusRequest,
    GetModelStatusResponse,
    MultiInferenceRequest,
    MultiInferenceResponse,
    PredictRequest,
    PredictResponse,
    RegressionRequest,
    RegressionResponse,
    ReloadConfigRequest,
    ReloadConfigResponse,
)
from tfship.serve_client._errors import error_from_status
from tfship.serve_client._transports._base import Call

__all__ = ["AsyncInProcessTransport", "InProcessCore", "InProcessServer", "InProcessTransport"]

# Method -> the ServingCore method that answers it.
_CORE_METHODS = {
    "Predict": "predict",
    "Classify": "classify",
    "Regress": "regress",
    "MultiInference": "multi_inference",
    "GetModelMetadata": "get_model_metadata",
    "GetModelStatus": "get_model_status",
    "HandleReloadConfigRequest": "reload_config",
}


class StatusError(Protocol):
    """A failure the core reports as a status (its ``RpcError``): the code and TF Serving's text."""

    @property
    def code(self) -> Any: ...  # a StatusCode-like enum member: its ``.name`` is the code

    def wire_message(self) -> str: ...


class InProcessCore(Protocol):
    """What the transport needs of ``tfship.server``'s ``ServingCore``: one method per RPC,
    taking and returning TF Serving's messages. (Named here, not imported: the client stays
    below the server.)"""

    def predict(self, request: PredictRequest) -> PredictResponse: ...
    def classify(self, request: ClassificationRequest) -> ClassificationResponse: ...
    def regress(self, request: RegressionRequest) -> RegressionResponse: ...
    def multi_inference(self, request: MultiInferenceRequest) -> MultiInferenceResponse: ...
    def get_model_metadata(self, request: GetModelMetadataRequest) -> GetModelMetadataResponse: ...
    def get_model_status(self, request: GetModelStatusRequest) -> GetModelStatusResponse: ...
    def reload_config(
        self, request: ReloadConfigRequest
    ) -> tuple[ReloadConfigResponse, StatusError | None]: ...


class InProcessServer(Protocol):
    """A ``tfship.server.ModelServer``, as far as the transport cares: its core, which is
    ``None`` until the server is started (the transport refuses a server in that state)."""

    @property
    def core(self) -> InProcessCore | None: ...


Served = Union[InProcessServer, InProcessCore]


def _core_of(server: Served) -> InProcessCore:
    """The ``ServingCore`` of a started ``ModelServer``, or ``server`` itself when it is one."""
    if all(hasattr(server, name) for name in _CORE_METHODS.values()):
        return cast(InProcessCore, server)
    core: InProcessCore | None = getattr(server, "core", None)
    if core is None:
        raise TypeError(f"expected a started tfship.server.ModelServer or its ServingCore, got {server!r}")
    return core


class InProcessTransport:
    """TF Serving's API answered in this process by a ``tfship.server`` core.

    Args:
        server: a started ``tfship.server.ModelServer`` (its ports are not used) or its
            ``ServingCore``.

    The call runs on the caller's thread; a deadline is checked before it starts, not during.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.server import ModelServer
        >>> from tfship.serve_client import ServingClient
        >>> with ModelServer.from_base_path("m", "m") as server:
        ...     client = ServingClient(transport=InProcessTransport(server))
        ...     client.predict("m", {"x": [[1.0, 2.0, 3.0]]}).as_numpy("y")
        array([[2., 4., 6.]], dtype=float32)
    """

    needs_signature = False
    takes_arrays = False

    def __init__(self, server: Served) -> None:
        self.core = _core_of(server)

    def __repr__(self) -> str:
        return f"InProcessTransport({self.core!r})"

    def send(self, call: Call, timeout: float | None) -> Any:
        """Answer one call; the core's status errors leave as ``ServingCallError`` subclasses."""
        answer = _answer(getattr(self.core, _CORE_METHODS[call.method]), call)
        if call.method == "Predict":
            return answer.SerializeToString()
        return answer

    def close(self) -> None:
        """Nothing to release: the server belongs to its owner."""


class AsyncInProcessTransport:
    """:class:`InProcessTransport` for ``AsyncServingClient``: calls run in a worker thread,
    so the event loop keeps running while the model computes."""

    needs_signature = False
    takes_arrays = False

    def __init__(self, server: Served) -> None:
        self._sync = InProcessTransport(server)

    def __repr__(self) -> str:
        return f"AsyncInProcessTransport({self._sync.core!r})"

    async def send(self, call: Call, timeout: float | None) -> Any:
        """Answer one call in a worker thread, waiting at most ``timeout`` seconds."""
        work = asyncio.to_thread(self._sync.send, call, timeout)
        try:
            return await asyncio.wait_for(work, timeout)
        except asyncio.TimeoutError:
            raise error_from_status("DEADLINE_EXCEEDED", "no answer in time", **call.context) from None

    async def aclose(self) -> None:
        """Nothing to release: the server belongs to its owner."""


def _answer(method: Callable[[Any], Any], call: Call) -> Any:
    try:
        answer = method(call.request)
    except Exception as exc:
        code = getattr(exc, "code", None)
        name = getattr(code, "name", None)
        if name is not None and hasattr(exc, "wire_message"):  # the core's RpcError
            raise error_from_status(str(name), exc.wire_message(), **call.context) from exc
        # What the gRPC face answers for a failure that is not a status: INTERNAL.
        message = f"{type(exc).__name__}: {exc}"[:1024]
        raise error_from_status("INTERNAL", message, **call.context) from exc
    if call.method == "HandleReloadConfigRequest":
        answer, error = answer
        if error is not None:
            raise error_from_status(error.code.name, error.wire_message(), **call.context) from None
    return answer
