"""What a transport is: it carries one request message to a serving peer and brings its answer.

The client builds every request as TF Serving's protobuf message (``PredictRequest``, ...) and
maps every answer to a typed result; a transport only moves them. Its answer is the response
message, except for Predict, where it is the serialized ``PredictResponse`` (decoded on the
fast packed path) or, when the wire is not protobuf, the decoded ``PredictOutputs``.
Failures leave a transport as ``ServingCallError`` subclasses, chosen from the gRPC status
code (REST: from the HTTP status TF Serving maps it to).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from tfship.inspect import SignatureInfo

__all__ = ["AsyncTransport", "Call", "Transport", "check_target", "is_rest_url"]

# TF Serving's RPCs, by service.
PREDICTION_METHODS = ("Predict", "Classify", "Regress", "MultiInference", "GetModelMetadata")
MODEL_METHODS = ("GetModelStatus", "HandleReloadConfigRequest")


@dataclass(frozen=True)
class Call:
    """One RPC to send: TF Serving's method name and request message, and what it is about.

    ``model`` and ``version`` name the servable in error messages; ``signature`` is the
    signature the client knows for the call (a ``tfship.inspect.SignatureInfo``), which REST
    needs to give outputs their dtypes back. ``inputs``: a Predict's checked inputs as numpy
    arrays, for a transport that takes them (``takes_arrays``); its request then holds none.
    """

    method: str
    request: Message
    model: str | None = None
    version: int | str | None = None
    signature: SignatureInfo | None = None
    inputs: Mapping[str, Any] | None = None

    @property
    def context(self) -> dict[str, Any]:
        """The keywords of ``error_from_status`` for a failure of this call."""
        return {"model": self.model, "version": self.version, "method": self.method}


class Transport(Protocol):
    """A blocking transport (``ServingClient``'s)."""

    #: Whether Predict answers need the signature (REST: JSON loses output dtypes).
    needs_signature: bool
    #: Whether Predict inputs are best sent as checked numpy arrays (``Call.inputs``) rather
    #: than encoded in the request (REST writes JSON from arrays).
    takes_arrays: bool

    def send(self, call: Call, timeout: float | None) -> Any:
        """Send ``call`` once, waiting at most ``timeout`` seconds (None: no limit)."""

    def close(self) -> None:
        """Release connections; calling it again does nothing."""


class AsyncTransport(Protocol):
    """An asyncio transport (``AsyncServingClient``'s)."""

    needs_signature: bool
    takes_arrays: bool

    async def send(self, call: Call, timeout: float | None) -> Any:
        """Send ``call`` once, waiting at most ``timeout`` seconds (None: no limit)."""

    async def aclose(self) -> None:
        """Release connections; calling it again does nothing."""


def is_rest_url(target: str) -> bool:
    """Whether a target names TF Serving's REST API (``http://`` or ``https://``)."""
    return target.startswith(("http://", "https://"))


# gRPC's own target schemes, passed through as they are.
_GRPC_SCHEMES = ("unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:", "vsock:")


def check_target(target: str) -> None:
    """Refuse a target without a port, or with one that is not a port number, when the client
    is made: the call would otherwise fail only after its retries, as if the server were down.

    Example:
        >>> check_target("127.0.0.1:8500"); check_target("unix:/run/serving.sock"); check_target("http://h:8501")
        >>> check_target("127.0.0.1")
        Traceback (most recent call last):
        ...
        ValueError: target '127.0.0.1' names no port: give host:port (TF Serving listens on 8500 \
for gRPC, 8501 for REST)
    """
    if target.startswith(_GRPC_SCHEMES):
        return
    rest = is_rest_url(target)
    if rest:
        parsed = urlsplit(target)
        host, port = parsed.hostname or "", _port_text(parsed.netloc.rsplit("@", 1)[-1])
    elif "://" in target:
        raise ValueError(
            f"target {target!r}: the scheme is not one the client speaks; give host:port (gRPC), "
            "http://host:port or https://host:port (REST)"
        )
    else:
        host, port = target.rsplit(":", 1)[0] if ":" in target else target, _port_text(target)
    if not host:
        raise ValueError(f"target {target!r} names no host: give host:port")
    if port is None:
        raise ValueError(
            f"target {target!r} names no port: give host:port (TF Serving listens on 8500 for "
            "gRPC, 8501 for REST)"
        )
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"target {target!r}: port {port!r} is not a port number (1-65535)")


def _port_text(netloc: str) -> str | None:
    """What follows the last ``:`` of ``host:port`` (``[v6]:port`` included), or None."""
    if netloc.startswith("["):
        _, _, after = netloc.partition("]")
        return after[1:] if after.startswith(":") else None
    return netloc.rsplit(":", 1)[1] if ":" in netloc else None
