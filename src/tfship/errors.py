"""The one exception tree of tfship.

Every failure of the environment, of I/O, of a model or of a server is a ``TfshipError``;
misuse of the API (wrong argument types or values) raises ``TypeError``/``ValueError``.
The CLI prints ``Error: <message>`` and exits with the class's ``exit_code``; an ``OSError``
(a full disk, a read-only file system, a permission) is printed by :func:`os_error_text` as
``Error: <path>: <cause>`` and exits with 1.

::

    TfshipError (1)                         a failed operation
    ├── InputError (2)                      bad input from the user: files, records, flags
    │   ├── SchemaError (2)                 a schema file or a feature in it is invalid
    │   ├── DataError (2)                   a data file or a record does not match the schema
    │   │   ├── schema.MissingColumnError     a data file lacks a column of the schema
    │   │   ├── schema.CsvLineError           a CSV data line is not a row (not UTF-8, the header again)
    │   │   └── loaders.TooManyRejectsError   a batch job rejected more rows than --max-rejects
    │   ├── server.ServerConfigError      a server flag or model_config_list is invalid
    │   ├── promote.MetricNotMeasuredError  a threshold names a metric that was not measured
    │   └── trainer.ClusterConfigError    TF_CONFIG is invalid or names a setup TF 2.15 refuses
    ├── ModelError (2)                      a SavedModel or checkpoint is missing, corrupt or unusable
    │   ├── SignatureNotFoundError (2)      a signature or tag-set is not in the SavedModel
    │   ├── ModelInputError (2)             inputs given to a model do not match its signature
    │   └── exporters.CheckpointNotFoundError  no checkpoint to export
    ├── ExtraNotInstalledError (1)          a command or package needs the [tf] extra (also an ImportError)
    ├── TrainError (1)                      training or evaluation failed
    │   └── trainer.ClusterError            a cluster task failed, or a peer never answered
    ├── ExportError (1)                     an export failed; nothing was published
    │   ├── exporters.MetricNotFoundError (2)  the metric to rank by was not evaluated
    │   └── exporters.VerificationError     the staged export failed its checks or warmup
    ├── ServingError (1)                    serving, locally or through a TF Serving peer
    │   ├── server.LocalServerError         tfship serve could not start or load its models
    │   └── serve_client.ServingCallError   a call answered with a gRPC/HTTP error status:
    │       ModelNotFoundError (2) > VersionNotFoundError (2), ServingSignatureNotFoundError (2),
    │       InvalidInputError (2), FailedPreconditionError, DeadlineExceededError,
    │       UnavailableError, TlsError, MessageTooLargeError, ResourceExhaustedError,
    │       PermissionDeniedError, UnimplementedError, CallCancelledError, ServerInternalError,
    │       ModelLoadFailedError, MalformedResponseError (1 unless marked)
    └── VerdictError (3)                    an operation ran and its verdict is "no"
        ├── inspect.BreakingChangeError     diff found a breaking change
        ├── inspect.CheckFailedError        check found the export not ready to serve
        ├── inspect.DenylistedOpError       scan found a denylisted op
        └── promote.PromotionRefusedError   a candidate failed a check of promote

The classes named with a package live in that package and are exported from it; each says
when it is raised. A message names a value with :func:`value_text`, which reads the same on
numpy 1 and 2.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "DataError",
    "ExportError",
    "ExtraNotInstalledError",
    "InputError",
    "ModelError",
    "ModelInputError",
    "SchemaError",
    "ServingError",
    "SignatureNotFoundError",
    "TfshipError",
    "TrainError",
    "VerdictError",
    "os_error_text",
    "value_text",
]


class TfshipError(Exception):
    """Raised when an operation of tfship fails; the root of every tfship error.

    Example:
        >>> try:
        ...     raise SchemaError("feature 'age': unknown dtype 'float'")
        ... except TfshipError as exc:
        ...     exc.exit_code
        2
    """

    exit_code: int = 1


class InputError(TfshipError):
    """Raised when a file, record or option given by the user is invalid."""

    exit_code = 2


class SchemaError(InputError):
    """Raised when a schema, or one feature in it, is invalid; the message names the feature."""


class DataError(InputError):
    """Raised when a data file or record does not match what the schema expects."""


class ModelError(TfshipError):
    """Raised when a SavedModel or checkpoint is missing, corrupt or cannot be used."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class SignatureNotFoundError(ModelError):
    """Raised when a signature key or tag-set is not in a SavedModel; lists the valid ones."""

    def __init__(self, message: str, *, path: str | None = None, signature: str | None = None) -> None:
        super().__init__(message, path=path)
        self.signature = signature


class ModelInputError(ModelError):
    """Raised when inputs given to a model do not match its signature (name, dtype, rank)."""


class ExtraNotInstalledError(TfshipError, ImportError):
    """Raised when a command or package needs what the ``tf`` extra installs (TensorFlow, the
    Estimator, pandas, pyarrow) and it is missing; the one-line message names the pip command.
    Also an ``ImportError``, which is what importing ``tfship.trainer`` without it raises.
    """


class TrainError(TfshipError):
    """Raised when training or evaluation fails."""


class ExportError(TfshipError):
    """Raised when an export fails; the staging directory is removed and nothing is published."""


class ServingError(TfshipError):
    """Raised when a TensorFlow Serving peer answers with an error status."""


class VerdictError(TfshipError):
    """Raised when a check ran and its verdict is negative (a breaking diff, a denylisted op)."""

    exit_code = 3


def os_error_text(exc: OSError) -> str:
    """An I/O error as one line: the path it names, then the cause.

    Example:
        >>> os_error_text(OSError(28, "No space left on device", "preds.csv"))
        'preds.csv: No space left on device'
        >>> os_error_text(OSError(18, "Invalid cross-device link", "a.tmp", None, "a"))
        'a.tmp -> a: Invalid cross-device link'
    """
    cause = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is None:
        return cause
    where = os.fsdecode(exc.filename)
    if exc.filename2 is not None:
        where += f" -> {os.fsdecode(exc.filename2)}"
    return f"{where}: {cause}"


def value_text(value: object) -> str:
    """``repr(value)`` as a message shows it, with numpy scalars as the numbers and text they hold.

    numpy 2 writes ``repr(np.float64(1.5))`` as ``np.float64(1.5)`` where numpy 1 wrote
    ``1.5``; a message naming a value taken from an array reads the same on both. A list or a
    tuple shows its items this way; any other value is its ``repr``. A text longer than 120
    characters keeps its two ends and says its length, so a hostile cell cannot fill a log.

    Example:
        >>> import numpy as np
        >>> value_text(np.float64(1.5)), value_text(np.str_("Adelie")), value_text(np.True_)
        ('1.5', "'Adelie'", 'True')
        >>> value_text([np.int64(3), "a", (np.float32(0.1),)])
        "[3, 'a', (0.1,)]"
        >>> shown = value_text("x" * 1000)
        >>> len(shown), shown[-34:]
        (133, "xxxxxxxxxxxxxxx' (1002 characters)")
    """
    text = _value_text(value)
    if len(text) <= _VALUE_TEXT_MAX:
        return text
    return f"{text[: _VALUE_TEXT_MAX - 24]}...{text[-16:]} ({len(text)} characters)"


#: the longest value a message shows whole; a longer one keeps its two ends and its length
_VALUE_TEXT_MAX = 120


def _value_text(value: object) -> str:
    numpy = sys.modules.get("numpy")  # not imported yet: the value holds no numpy scalar
    if numpy is not None and isinstance(value, numpy.generic):
        if isinstance(value, (numpy.number, numpy.bool_)):
            return str(value)  # numpy 2 changed the repr of scalars, not their str
        if isinstance(value, (numpy.str_, numpy.bytes_)):
            return repr(value.item())
    if type(value) is list:
        return "[" + ", ".join(map(_value_text, value)) + "]"
    if type(value) is tuple:
        items = ", ".join(map(_value_text, value))
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)
