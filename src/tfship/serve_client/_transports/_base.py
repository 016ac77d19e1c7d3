"""What a transport is: it carries one request message to a serving peer and brings its answer.

The client builds every request as TF Serving's protobuf message (``PredictRequest``, ...) and
maps every answer to a typed result; a transport only moves them. Its answer is the response
message, except for Predict, where it is the serialized ``PredictResponse`` (decoded on the
fast packed path) or, when the wire is not protobuf, the decoded ``PredictOutputs``.
Failures leave a transport as ``ServingCallError`` subclasses, chosen from the gRPC status
code (REST: from the HTTP status TF Serving maps it to).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["AsyncTransport", "Call", "Transport"]

# TF Serving's RPCs, by service.
PREDICTION_METHODS = ("Predict", "Classify", "Regress", "MultiInference", "GetModelMetadata")
MODEL_METHODS = ("GetModelStatus", "HandleReloadConfigRequest")


@dataclass(frozen=True)
class Call:
    """One RPC to send: TF Serving's method name and request message, and what it is about.

    ``model`` and ``version`` name the servable in error messages; ``signature`` is the
    signature the client knows for the call (a ``tfship.inspect.SignatureInfo``), which REST
    needs to give outputs their dtypes back.
    """

    method: str
    request: Any
    model: str | None = None
    version: int | str | None = None
    signature: Any = None

    @property
    def context(self) -> dict[str, Any]:
        """The keywords of ``error_from_status`` for a failure of this call."""
        return {"model": self.model, "version": self.version, "method": self.method}


class Transport(Protocol):
    """A blocking transport (``ServingClient``'s)."""

    #: Whether Predict answers need the signature (REST: JSON loses output dtypes).
    needs_signature: bool

    def send(self, call: Call, timeout: float | None) -> Any:
        """Send ``call`` once, waiting at most ``timeout`` seconds (None: no limit)."""

    def close(self) -> None:
        """Release connections; calling it again does nothing."""


class AsyncTransport(Protocol):
    """An asyncio transport (``AsyncServingClient``'s)."""

    needs_signature: bool

    async def send(self, call: Call, timeout: float | None) -> Any:
        """Send ``call`` once, waiting at most ``timeout`` seconds (None: no limit)."""

    async def aclose(self) -> None:
        """Release connections; calling it again does nothing."""
