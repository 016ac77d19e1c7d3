"""What every gRPC service of the local server shares: one call answered, its error turned into
TF Serving's status (``RpcError``'s own, RESOURCE_EXHAUSTED for memory, INTERNAL for a bug), and
the byte (de)serializers the generic handlers take."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import grpc

from tfship.server._status import RpcError

if TYPE_CHECKING:
    from google.protobuf.message import Message

logger = logging.getLogger("tfship.server._grpc")

T = TypeVar("T")


def answer(
    context: grpc.ServicerContext, call: Callable[[], T], done: Callable[[str], None] | None = None
) -> T:
    """Run one call; errors become TF Serving's statuses; ``done`` hears the code's name."""
    code = "OK"
    try:
        return call()
    except Exception as exc:
        status, message = status_of(exc)
        code = status.name
        context.abort(status, message)
        raise  # not reached: abort raises
    finally:
        if done is not None:
            done(code)


def status_of(exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The status a call that raised ``exc`` ends with: TF Serving's for an ``RpcError``."""
    if isinstance(exc, RpcError):
        return exc.code, exc.wire_message()
    if isinstance(exc, MemoryError):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, "out of memory serving this request"
    # a bug must become INTERNAL, never a dropped connection
    logger.error("unexpected error while serving a request", exc_info=exc)
    return grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}"[:1024]


def identity(data: bytes) -> bytes:
    """Bytes pass through: a handler that reads or writes its message bytes itself."""
    return data


def serialize(message: Message) -> bytes:
    """A message's bytes, typed for the handlers."""
    data: bytes = message.SerializeToString()
    return data
