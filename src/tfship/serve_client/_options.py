"""Options every client shares whatever its transport: the timeout sentinel, retries with
backoff inside one deadline, and TLS settings.

``RetryState`` is the bookkeeping of one call's attempts; the sync and async clients run the
same state and differ only in how they wait.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar, Union, cast

from tfship.serve_client._errors import (
    DeadlineExceededError,
    ServingCallError,
    error_from_status,
    import_grpc,
)

if TYPE_CHECKING:
    import grpc

__all__ = [
    "CHECK_EVERY",
    "DEFAULT",
    "DEFAULT_RETRIES",
    "DeadlineCheck",
    "RetryPolicy",
    "RetryState",
    "Timeout",
    "TlsConfig",
    "deadline_check",
    "deadline_for",
    "late",
    "names_valid_keywords",
    "time_left",
]

_Method = TypeVar("_Method", bound=Callable[..., Any])


def names_valid_keywords(method: _Method) -> _Method:
    """Make a wrong keyword's ``TypeError`` list the valid ones and the likely intended one.

    ``client.predict("m", x, signature_name="s")`` says ``did you mean 'signature'?`` and every
    keyword ``predict`` takes, instead of Python's bare "unexpected keyword argument".
    """
    params = inspect.signature(method).parameters
    named = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    valid = [name for name, p in params.items() if name != "self" and p.kind in named]

    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for name in kwargs:
            if name not in params:
                close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TypeError(
                    f"{method.__qualname__}() got an unexpected keyword argument {name!r}{hint}; "
                    f"it takes: {', '.join(valid)}"
                )
        return method(*args, **kwargs)

    return cast(_Method, checked)


logger = logging.getLogger("tfship.serve_client")
_NEVER_RETRY = frozenset({"INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"})


class _Default(Enum):
    """Sentinel type of :data:`DEFAULT`: "use the client's timeout" (an enum of one member, so
    ``timeout is DEFAULT`` narrows a :data:`Timeout` for the type checker)."""

    DEFAULT = "DEFAULT"

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default.DEFAULT
"""Per-call ``timeout=DEFAULT`` means the client's timeout; ``None`` means no deadline."""

Timeout = Union[float, None, _Default]
"""A call's ``timeout=``: seconds, ``None`` (no deadline) or :data:`DEFAULT` (the client's)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Retries with capped exponential backoff and jitter, inside the call's overall deadline.

    Attempt ``n`` (1-based) that fails with a retryable code sleeps
    ``min(max_backoff, initial_backoff * multiplier ** (n - 1))`` scaled by a random factor in
    ``[1 - jitter, 1]``, unless the deadline would pass first. ``INVALID_ARGUMENT``,
    ``NOT_FOUND`` and ``FAILED_PRECONDITION`` are never retried: sending again cannot help.

    Example:
        >>> RetryPolicy(attempts=3).delay(2, random.Random(0)) <= 0.1
        True
    """

    attempts: int = 5
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.5
    retry_on: frozenset[str] = frozenset({"UNAVAILABLE"})

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must be within [0, 1], got {self.jitter}")
        forbidden = sorted(self.retry_on & _NEVER_RETRY)
        if forbidden:
            raise ValueError(f"codes {forbidden} are never retried: the same request fails again")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to sleep after failed attempt number ``attempt`` (1-based)."""
        cap = min(self.max_backoff, self.initial_backoff * self.multiplier ** (attempt - 1))
        return cap * (1.0 - self.jitter * rng.random())

    @classmethod
    def of(cls, retries: int | RetryPolicy | None) -> RetryPolicy:
        """The policy for a client's ``retries=``: a policy, a count of retries, or None (none).

        Example:
            >>> RetryPolicy.of(3).attempts, RetryPolicy.of(None).attempts
            (4, 1)
        """
        if retries is None:
            return cls(attempts=1)
        if isinstance(retries, RetryPolicy):
            return retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a RetryPolicy or an int >= 0, got {retries!r}")
        return cls(attempts=retries + 1)


DEFAULT_RETRIES = RetryPolicy()
"""The default: 5 attempts, 50 ms doubling up to 2 s, half jitter, on UNAVAILABLE only."""


@dataclass(frozen=True)
class TlsConfig:
    """TLS (or mutual TLS with ``client_cert`` + ``client_key``) for the client's connection.

    Each certificate is PEM bytes or a path to a PEM file; ``ca_cert=None`` trusts the system
    roots. ``server_name`` overrides the name checked against the server's certificate. The
    server's side is ``tfship.server``'s own ``TlsConfig`` (its key and certificate).

    Example:
        >>> TlsConfig(ca_cert=b"-----BEGIN CERTIFICATE-----...").server_name is None
        True
    """

    ca_cert: bytes | str | Path | None = None
    client_cert: bytes | str | Path | None = None
    client_key: bytes | str | Path | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        if (self.client_cert is None) != (self.client_key is None):
            raise ValueError("mutual TLS needs both client_cert and client_key")

    def credentials(self) -> grpc.ChannelCredentials:
        """The ``grpc.ChannelCredentials`` for this configuration."""
        grpc = import_grpc()
        return grpc.ssl_channel_credentials(
            root_certificates=pem(self.ca_cert),
            private_key=pem(self.client_key),
            certificate_chain=pem(self.client_cert),
        )


Tls = Union[bool, TlsConfig, "grpc.ChannelCredentials", None]
"""A client's ``tls=``: ``True`` (system roots), a :class:`TlsConfig`, ``grpc.ChannelCredentials``
(gRPC only) or ``None``/``False`` (plain text)."""


def pem(value: bytes | str | Path | None) -> bytes | None:
    """PEM bytes given as bytes or as the path of a file."""
    if value is None or isinstance(value, bytes):
        return value
    return Path(value).read_bytes()


def deadline_for(timeout: Timeout, default: float | None) -> float | None:
    """The monotonic deadline of a call given ``timeout=`` (``DEFAULT``: the client's)."""
    budget = default if timeout is DEFAULT else timeout
    return None if budget is None else time.monotonic() + budget


def time_left(deadline: float | None, what: str, context: Mapping[str, Any]) -> float | None:
    """Seconds left before ``deadline`` (None: no deadline); once it has passed, the call's
    ``DeadlineExceededError``, saying when: ``the call's deadline passed {what}``. ``context``
    names the call (``Call.context``: method, model, version)."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise late(what, context)
    return left


def late(what: str, context: Mapping[str, Any]) -> DeadlineExceededError:
    """The error of a call whose deadline passed ``what`` (``while the request was built``)."""
    err = error_from_status("DEADLINE_EXCEEDED", f"the call's deadline passed {what}", **context)
    assert isinstance(err, DeadlineExceededError)
    return err


CHECK_EVERY = 256
"""Items (records, examples) a loop builds between two calls of its :data:`DeadlineCheck`."""

DeadlineCheck = Callable[[str], None]
"""What a long loop of encoding calls now and then: raises once the call's deadline passed."""


def deadline_check(deadline: float | None, context: Mapping[str, Any]) -> DeadlineCheck | None:
    """The check that bounds a call's own work (building, encoding) by its deadline, or None
    without one: ``check("while the request was built")`` raises ``DeadlineExceededError`` once
    the deadline passed. Loops call it every few hundred items, which costs nothing."""
    if deadline is None:
        return None

    def check(what: str) -> None:
        time_left(deadline, what, context)

    return check


class RetryState:
    """One call's attempts: the time left before each, and the backoff (or giving up) after a
    failure. The sync and async clients share it and differ only in how they wait."""

    def __init__(
        self, policy: RetryPolicy, deadline: float | None, rng: random.Random, context: Mapping[str, Any]
    ) -> None:
        self.policy = policy
        self.deadline = deadline
        self.rng = rng
        self.context = context
        self.number = 0

    def next_attempt(self) -> float | None:
        """Count an attempt; the seconds left for it (None: no deadline), or DeadlineExceededError."""
        self.number += 1
        remaining = None if self.deadline is None else self.deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise _deadline_error(self.context, self.number - 1)
        return remaining

    def delay_after(self, exc: ServingCallError) -> float:
        """Seconds to wait before the next attempt; re-raises ``exc`` when retrying cannot help."""
        delay = self._delay(exc)
        if delay is None:
            if self.number > 1:
                exc.args = (f"{exc.args[0]} (after {self.number} attempts)",)
            raise exc
        logger.debug(
            "%s failed with %s; retry %d in %.3f s", self.context.get("method"), exc.code, self.number, delay
        )
        return delay

    def _delay(self, exc: ServingCallError) -> float | None:
        if not exc.retryable or exc.code not in self.policy.retry_on or self.number >= self.policy.attempts:
            return None
        delay = self.policy.delay(self.number, self.rng)
        if self.deadline is not None and time.monotonic() + delay >= self.deadline:
            return None
        return delay


def _deadline_error(context: Mapping[str, Any], attempts: int) -> DeadlineExceededError:
    err = error_from_status(
        "DEADLINE_EXCEEDED",
        f"deadline passed before attempt {attempts + 1}",
        model=context.get("model"),
        version=context.get("version"),
        method=context.get("method", ""),
    )
    assert isinstance(err, DeadlineExceededError)
    return err
