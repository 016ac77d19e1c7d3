"""Status codes and errors of the local server, kept apart so every server module shares them."""

from __future__ import annotations

from typing import Any

import grpc

from tfship._tf import tf_error_cause
from tfship.errors import InputError, ServingError

# TensorFlow Serving cuts long error texts (grpc_status_util.cc) so a status never balloons.
_MAX_MESSAGE = 1024


class LocalServerError(ServingError):
    """Raised when the local server cannot start or a model does not become available in time.

    Example:
        >>> raise LocalServerError("model 'm' did not become available within 5 s")
        Traceback (most recent call last):
        ...
        tfship.server._status.LocalServerError: model 'm' did not become ...
    """


class ServerConfigError(InputError):
    """Raised when a server option or a ``model_config_list`` file is invalid; names the field.

    Example:
        >>> raise ServerConfigError("--version-policy 'newest': expected latest[:N], all, ...")
        Traceback (most recent call last):
        ...
        tfship.server._status.ServerConfigError: --version-policy 'newest': ...
    """


class RpcError(Exception):
    """An RPC outcome other than OK: a gRPC status code and TensorFlow Serving's message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def code_number(self) -> int:
        """The numeric code (TensorFlow's error code and gRPC's are the same numbers)."""
        number: int = self.code.value[0]
        return number

    def wire_message(self) -> str:
        """The message as the server sends it: cut to 1024 characters plus "...TRUNCATED"."""
        if len(self.message) > _MAX_MESSAGE:
            return self.message[:_MAX_MESSAGE] + "...TRUNCATED"
        return self.message


def invalid(message: str) -> RpcError:
    """An INVALID_ARGUMENT error, the most common answer to a bad request."""
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, message)


def code_by_number(number: int) -> grpc.StatusCode:
    """The ``grpc.StatusCode`` with that number (UNKNOWN for numbers gRPC does not define)."""
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN


def from_exception(exc: BaseException) -> RpcError:
    """Translate an engine failure into the status TensorFlow Serving would report.

    TensorFlow's own errors carry their code; anything else raised while running a model is
    reported as INVALID_ARGUMENT when it blames the inputs and INTERNAL otherwise.
    """
    if isinstance(exc, RpcError):
        return exc
    seen: BaseException | None = exc
    while seen is not None:
        code = getattr(seen, "error_code", None)
        if isinstance(code, int) and type(seen).__module__.startswith("tensorflow"):
            # the op's own message, one line, without Python's context or the node trailer
            return RpcError(code_by_number(code), tf_error_cause(seen))
        seen = seen.__cause__
    from tfship.errors import ModelInputError

    if isinstance(exc, (ModelInputError, ValueError, TypeError)):
        return invalid(str(exc))
    return RpcError(grpc.StatusCode.INTERNAL, str(exc) or type(exc).__name__)


def status_fields(error: RpcError | None) -> dict[str, Any]:
    """``error_code``/``error_message`` for a ``StatusProto`` (OK: code 0, empty message)."""
    if error is None:
        return {"error_code": 0, "error_message": ""}
    return {"error_code": error.code_number, "error_message": error.message}
