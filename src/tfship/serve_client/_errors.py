"""Errors of the serving client: one boundary turns every gRPC status into one class of a tree.

::

    ServingError (tfship.errors, exit 1)
    └── ServingCallError (1)              a call to a serving peer failed; .code .details .model .version
        ├── ModelNotFoundError (2)        NOT_FOUND: no version of the model is loaded
        │   └── VersionNotFoundError (2)  NOT_FOUND: that version (or label) is not loaded
        ├── ServingSignatureNotFoundError (2)  the signature is not in the served model
        ├── InvalidInputError (2)         INVALID_ARGUMENT / OUT_OF_RANGE, or rejected before sending
        ├── FailedPreconditionError (1)   FAILED_PRECONDITION (other than a missing signature)
        ├── DeadlineExceededError (1)     DEADLINE_EXCEEDED: the call's deadline passed
        ├── UnavailableError (1)          UNAVAILABLE: server down, unreachable or overloaded
        ├── TlsError (1)                  the TLS handshake failed (certificate, server name, plain port)
        ├── MessageTooLargeError (1)      RESOURCE_EXHAUSTED: a message is over the size limit
        ├── ResourceExhaustedError (1)    RESOURCE_EXHAUSTED: any other quota
        ├── PermissionDeniedError (1)     PERMISSION_DENIED / UNAUTHENTICATED
        ├── UnimplementedError (1)        UNIMPLEMENTED: the server lacks that RPC or feature
        ├── CallCancelledError (1)        CANCELLED
        ├── ServerInternalError (1)       INTERNAL, UNKNOWN, DATA_LOSS, ABORTED, ALREADY_EXISTS
        ├── ModelLoadFailedError (1)      the version waited for ended with a load error
        └── MalformedResponseError (1)    the answer could not be decoded

The class comes from the status code through :data:`CODE_TO_ERROR`, refined by TF Serving's
message texts (a ``NOT_FOUND`` naming ``Specific(model, 3)`` is a missing version, a
``FAILED_PRECONDITION`` naming a signature key is a missing signature) and by gRPC's (an
``UNAVAILABLE`` whose cause is a failed TLS handshake is a ``TlsError``, never retried).

gRPC is imported only through :func:`import_grpc`, which keeps gRPC's own logging quiet
(``GRPC_VERBOSITY=NONE`` unless the environment sets it): the error a call raises says what
went wrong, without gRPC's handshake lines on stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING

from tfship.errors import ServingError

if TYPE_CHECKING:
    import grpc

__all__ = [
    "CODE_TO_ERROR",
    "CallCancelledError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InvalidInputError",
    "MalformedResponseError",
    "MessageTooLargeError",
    "ModelLoadFailedError",
    "ModelNotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "ServerInternalError",
    "ServingCallError",
    "ServingSignatureNotFoundError",
    "TlsError",
    "UnavailableError",
    "UnimplementedError",
    "VersionNotFoundError",
    "error_from_status",
    "import_grpc",
    "renamed_for_call",
    "rpc_errors",
]


class ServingCallError(ServingError):
    """Raised when a call to a TF Serving peer fails; carries the status and what was asked.

    Attributes:
        code: the status code name (``"NOT_FOUND"``), or None for a failure found client-side.
        details: the server's message, unchanged.
        model: the model name of the request, if any.
        version: the version number or label of the request, if any.

    Example:
        >>> err = ServingCallError("boom", code="INTERNAL", details="boom")
        >>> err.code, err.exit_code
        ('INTERNAL', 1)
    """

    hint: str = ""
    #: Whether sending the same call again may succeed (retried only if its code is retried).
    retryable: bool = True

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: str = "",
        model: str | None = None,
        version: int | str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.details = details
        self.model = model
        self.version = version


class ModelNotFoundError(ServingCallError):
    """Raised when the server has no loaded version of the model (``NOT_FOUND``)."""

    exit_code = 2
    hint = "check the model name and that a version finished loading (tfship client status)"


class VersionNotFoundError(ModelNotFoundError):
    """Raised when the requested version or label of the model is not loaded."""

    hint = "list the loaded versions with status(), or leave version unset for the latest"


class ServingSignatureNotFoundError(ServingCallError):
    """Raised when the signature key is not in the served model; see metadata() for the keys."""

    exit_code = 2
    hint = "list the signature keys with metadata()"


class InvalidInputError(ServingCallError):
    """Raised when the server rejects the request (``INVALID_ARGUMENT``) or validation does."""

    exit_code = 2


class FailedPreconditionError(ServingCallError):
    """Raised on ``FAILED_PRECONDITION`` other than a missing signature."""


class DeadlineExceededError(ServingCallError):
    """Raised when the call's deadline passed before an answer (``DEADLINE_EXCEEDED``)."""

    hint = "raise timeout= or check the server's load"


class UnavailableError(ServingCallError):
    """Raised when the server cannot be reached or is overloaded (``UNAVAILABLE``), after retries."""

    hint = "check that the server runs at that address"


class TlsError(ServingCallError):
    """Raised at once, without retries, when the TLS handshake fails: a certificate that does
    not verify, a server name the certificate does not name, TLS to a port that speaks none."""

    hint = "check the CA certificate, the server name and that the port serves TLS"
    retryable = False


class MessageTooLargeError(ServingCallError):
    """Raised when a request or response is larger than a gRPC message size limit."""

    hint = "raise max_message_bytes (client) or the server's limit, or send smaller batches"


class ResourceExhaustedError(ServingCallError):
    """Raised on ``RESOURCE_EXHAUSTED`` that is not about message size (a quota, a queue)."""


class PermissionDeniedError(ServingCallError):
    """Raised on ``PERMISSION_DENIED`` or ``UNAUTHENTICATED``."""


class UnimplementedError(ServingCallError):
    """Raised when the server does not implement the RPC or the feature (``UNIMPLEMENTED``)."""


class CallCancelledError(ServingCallError):
    """Raised when the call was cancelled (``CANCELLED``)."""


class ServerInternalError(ServingCallError):
    """Raised on ``INTERNAL``, ``UNKNOWN``, ``DATA_LOSS``, ``ABORTED`` or ``ALREADY_EXISTS``."""


class ModelLoadFailedError(ServingCallError):
    """Raised when waiting for a version that ended (``END``) with a load error."""


class MalformedResponseError(ServingCallError):
    """Raised when an answer cannot be decoded (bad tensor content, unknown dtype)."""


# Every grpc.StatusCode name -> the class for that code; a test checks that none is missing.
CODE_TO_ERROR: dict[str, type[ServingCallError]] = {
    "OK": ServerInternalError,  # an error "with status OK" is a broken peer
    "CANCELLED": CallCancelledError,
    "UNKNOWN": ServerInternalError,
    "INVALID_ARGUMENT": InvalidInputError,
    "DEADLINE_EXCEEDED": DeadlineExceededError,
    "NOT_FOUND": ModelNotFoundError,
    "ALREADY_EXISTS": ServerInternalError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
    "FAILED_PRECONDITION": FailedPreconditionError,
    "ABORTED": ServerInternalError,
    "OUT_OF_RANGE": InvalidInputError,
    "UNIMPLEMENTED": UnimplementedError,
    "INTERNAL": ServerInternalError,
    "UNAVAILABLE": UnavailableError,
    "DATA_LOSS": ServerInternalError,
    "UNAUTHENTICATED": PermissionDeniedError,
}

# (code, pattern in TF Serving's message) -> a more specific class; first match wins.
_REFINEMENTS: list[tuple[str, re.Pattern[str], type[ServingCallError]]] = [
    ("NOT_FOUND", re.compile(r"Specific\(|Could not find version "), VersionNotFoundError),
    (
        "INVALID_ARGUMENT",
        re.compile(r"Unrecognized servable version label"),
        VersionNotFoundError,
    ),
    (
        "FAILED_PRECONDITION",
        re.compile(r"Serving signature key .* not found"),
        ServingSignatureNotFoundError,
    ),
    (
        "INVALID_ARGUMENT",
        re.compile(
            r"No signature was found with the name|Requested signature not found in model graph"
            r"|Serving signature name: .* not found"
        ),
        ServingSignatureNotFoundError,
    ),
    (
        "RESOURCE_EXHAUSTED",
        re.compile(r"message larger than max|message size|too large", re.IGNORECASE),
        MessageTooLargeError,
    ),
    # gRPC's words for a failed handshake: the peer is there, the TLS setup is wrong.
    (
        "UNAVAILABLE",
        re.compile(
            r"(Tls|Ssl) handshake failed|SSL_ERROR|\[SSL|Hostname Verification"
            r"|Custom verification check|certificate verify|peer certificate",
            re.IGNORECASE,
        ),
        TlsError,
    ),
]


def error_class(code: str, details: str) -> type[ServingCallError]:
    """The most specific class for a status code name and a server message."""
    for refined_code, pattern, cls in _REFINEMENTS:
        if code == refined_code and pattern.search(details):
            return cls
    return CODE_TO_ERROR.get(code, ServerInternalError)


def error_from_status(
    code: str,
    details: str,
    *,
    model: str | None = None,
    version: int | str | None = None,
    method: str = "",
) -> ServingCallError:
    """Build the error for a failed call from its status code name and the server's message.

    Example:
        >>> err = error_from_status("NOT_FOUND", "Servable not found for request: Specific(m, 3)",
        ...                         model="m", version=3)
        >>> type(err).__name__, err.version
        ('VersionNotFoundError', 3)
    """
    cls = error_class(code, details)
    where = _where(method, model, version)
    prefix = f"{where}: " if where else ""
    message = f"{prefix}{_cause(cls, details)} [{code}]"
    if cls.hint:
        message += f"; {cls.hint}"
    return cls(message, code=code, details=details, model=model, version=version)


def _where(method: str, model: str | None, version: int | str | None) -> str:
    """``Predict model 'm' version 3``: the call an error is about."""
    where = [method] if method else []
    if model is not None:
        where.append(f"model {model!r}")
    if version is not None:
        where.append(f"version {version}")
    return " ".join(where)


_TLS_CAUSES = [
    (
        re.compile(r"Hostname|server name|peer name|not valid for", re.I),
        "the server's certificate does not name the server asked for (set TlsConfig(server_name=...))",
    ),
    (
        re.compile(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed", re.I),
        "the server's certificate "
        "does not verify against the CA certificate (or the system's roots, without one)",
    ),
    (
        re.compile(r"WRONG_VERSION_NUMBER|record layer|wrong version|http request|EOF occurred", re.I),
        "the port does not speak TLS (a plain port?)",
    ),
]


# TensorFlow's words when a tf.Example feature's list is of another kind than the model parses.
_EXAMPLE_KIND = re.compile(
    r"Key: (?P<key>[^,]+), Index: (?P<index>\d+)\.\s+Data types don't match\. "
    r"Data type: (?P<sent>\w+) but expected type: (?P<wanted>\w+)"
)
_KIND_HINTS = {
    ("int64", "float"): "a whole number in JSON is an int64 list; write it with a decimal point "
    "(1.0), or convert the records by the model's schema",
    ("float", "int64"): "write whole numbers for it",
}


def _cause(cls: type[ServingCallError], details: str) -> str:
    """The server's message; for a TLS failure or a feature of the wrong kind, first the cause
    in words, then the server's text."""
    if cls is TlsError:
        for pattern, cause in _TLS_CAUSES:
            if pattern.search(details):
                return f"TLS handshake failed: {cause} ({details})"
        return f"TLS handshake failed ({details})"
    kind = _EXAMPLE_KIND.search(details)
    if kind is not None:
        sent, wanted = kind["sent"], kind["wanted"]
        hint = _KIND_HINTS.get((sent, wanted), f"send it as a {wanted} list")
        return (
            f"example {kind['index']}: feature {kind['key']!r} was sent as {sent} but the model "
            f"reads it as {wanted}: {hint} ({details})"
        )
    return details or "no message"


def renamed_for_call(exc: ServingCallError, method: str, what: str) -> ServingCallError:
    """``exc``, raised by a step a call takes first (fetching the signature), named after the
    call the user made: ``Predict model 'm': its signature could not be fetched: ...``.

    Example:
        >>> inner = error_from_status("NOT_FOUND", "Servable not found", model="m",
        ...                           method="GetModelMetadata")
        >>> str(renamed_for_call(inner, "Predict", "its signature could not be fetched"))[:61]
        "Predict model 'm': its signature could not be fetched: Servab"
    """
    text = str(exc)
    inner = _where(_method_of(text), exc.model, exc.version)
    tail = text[len(inner) + 2 :] if inner and text.startswith(inner + ": ") else text
    message = f"{_where(method, exc.model, exc.version)}: {what}: {tail}"
    renamed = type(exc)(message, code=exc.code, details=exc.details, model=exc.model, version=exc.version)
    return renamed


def _method_of(text: str) -> str:
    first = text.split(" ", 1)[0]
    return first if first.isidentifier() and first[:1].isupper() else ""


def import_grpc() -> ModuleType:
    """The ``grpc`` module, imported with gRPC's own logging quiet unless the user chose a level.

    gRPC reads ``GRPC_VERBOSITY`` once, when it is first imported; a failed TLS handshake would
    otherwise print several lines on stderr for an error this client raises anyway.
    """
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    import grpc

    module: ModuleType = grpc  # the package is untyped
    return module


def status_name(exc: grpc.RpcError) -> str:
    """The status code name of a ``grpc.RpcError`` (``UNKNOWN`` when it carries none)."""
    code = exc.code() if callable(getattr(exc, "code", None)) else None
    return getattr(code, "name", None) or "UNKNOWN"


def status_details(exc: grpc.RpcError) -> str:
    details = exc.details() if callable(getattr(exc, "details", None)) else None
    return str(details or "")


@contextlib.contextmanager
def rpc_errors(
    *, model: str | None = None, version: int | str | None = None, method: str = ""
) -> Iterator[None]:
    """The one boundary: translate a ``grpc.RpcError`` raised inside into a ServingCallError.

    Example:
        >>> with rpc_errors(model="m"):
        ...     pass
    """
    grpc = import_grpc()

    try:
        yield
    except grpc.RpcError as exc:
        raise error_from_status(
            status_name(exc), status_details(exc), model=model, version=version, method=method
        ) from exc
