"""TF Serving's names, numbers and directory rules, written down once.

Everything here is a fact of TensorFlow's or TF Serving's formats, not a choice of ours: the
``DataType`` enum (its numbers, TensorFlow's names for it, the numpy dtype and the typed
``TensorProto`` field that carries it), the signature method names, the warmup file, the HTTP
status TF Serving's REST API answers for each gRPC code, and which directories under a model's
base path are versions.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"
# method name -> the API that serves it (what `tfship inspect` and the exporters report)
METHOD_KINDS: dict[str, str] = {
    PREDICT_METHOD: "predict",
    CLASSIFY_METHOD: "classify",
    REGRESS_METHOD: "regress",
}

# TF Serving replays this TFRecord of PredictionLogs when it loads a version
# (saved_model_warmup_util.cc), and refuses a file of more than 1000 records.
ASSETS_EXTRA = "assets.extra"
WARMUP_NAME = "tf_serving_warmup_requests"
WARMUP_FILE = os.path.join(ASSETS_EXTRA, WARMUP_NAME)
MAX_WARMUP_RECORDS = 1000
# tfship's own record of an export (schema, receiver, metrics), beside the warmup file.
METADATA_FILE = os.path.join(ASSETS_EXTRA, "tfship.json")
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class DataType:
    """One ``tensorflow.DataType``: its number, TensorFlow's name, numpy dtype and proto field.

    ``numpy`` is the storage dtype name (quantized types store as their integer type; strings
    are ``object``); ``field`` is the typed repeated field of ``TensorProto`` that carries the
    values when ``tensor_content`` is empty; ``field_numpy`` is the dtype those values have on
    the wire when it differs (16-bit floats as bit patterns, complex numbers as real pairs).
    """

    enum: int
    name: str  # DataTypeString: "float", "double", "half", "string", ...
    numpy: str
    field: str
    field_numpy: str | None = None

    @property
    def enum_name(self) -> str:
        """The proto enum name, as ``DataType_Name`` prints it (``DT_FLOAT``)."""
        return "DT_" + self.name.upper()

    @property
    def display(self) -> str:
        """The numpy-style name tfship shows (``float32``, ``string``, ``qint8``)."""
        if self.enum == DT_STRING:
            return "string"
        return self.name if self.name.startswith(("qint", "quint")) else self.numpy


DT_FLOAT = 1
DT_STRING = 7
DT_BFLOAT16 = 14

# types.proto numbers are stable across TensorFlow versions: no TensorFlow import is needed.
DATATYPES: dict[int, DataType] = {
    t.enum: t
    for t in (
        DataType(1, "float", "float32", "float_val"),
        DataType(2, "double", "float64", "double_val"),
        DataType(3, "int32", "int32", "int_val"),
        DataType(4, "uint8", "uint8", "int_val"),
        DataType(5, "int16", "int16", "int_val"),
        DataType(6, "int8", "int8", "int_val"),
        DataType(7, "string", "object", "string_val"),
        DataType(8, "complex64", "complex64", "scomplex_val", "float32"),
        DataType(9, "int64", "int64", "int64_val"),
        DataType(10, "bool", "bool", "bool_val"),
        DataType(11, "qint8", "int8", "int_val"),
        DataType(12, "quint8", "uint8", "int_val"),
        DataType(13, "qint32", "int32", "int_val"),
        DataType(14, "bfloat16", "bfloat16", "half_val", "uint16"),
        DataType(15, "qint16", "int16", "int_val"),
        DataType(16, "quint16", "uint16", "int_val"),
        DataType(17, "uint16", "uint16", "int_val"),
        DataType(18, "complex128", "complex128", "dcomplex_val", "float64"),
        DataType(19, "half", "float16", "half_val", "uint16"),
        DataType(22, "uint32", "uint32", "uint32_val"),
        DataType(23, "uint64", "uint64", "uint64_val"),
    )
}
# Types tfship's tensor codec does not carry: named (as TensorFlow names them), never encoded.
# The float8, float4, int4 and int2 types are ml_dtypes' types of the same names; TensorFlow stores each
# value in a byte of its own (tensor_content holds one byte per element, nothing is packed).
_OTHER_NAMES = {
    0: "invalid",
    20: "resource",
    21: "variant",
    24: "float8_e5m2",
    25: "float8_e4m3fn",
    26: "float8_e4m3fnuz",
    27: "float8_e4m3b11fnuz",
    28: "float8_e5m2fnuz",
    29: "int4",
    30: "uint4",
    31: "int2",
    32: "uint2",
    33: "float4_e2m1fn",
}
# The types above that hold numbers (ml_dtypes' numpy dtypes): name -> DataType number, so that
# an array of one is refused as a type tfship does not carry rather than one TensorFlow lacks.
UNCARRIED_NUMERIC: dict[str, int] = {
    name: enum for enum, name in _OTHER_NAMES.items() if name not in ("invalid", "resource", "variant")
}
# A reference type (a TF1 graph's variables) is its value type's number plus this.
_REF_OFFSET = 100
# numpy dtype name -> DataType number (the quantized types are never chosen from numpy).
ENUM_OF_NUMPY: dict[str, int] = {
    t.numpy: t.enum for t in DATATYPES.values() if not t.name.startswith(("qint", "quint"))
}


def datatype(enum: int) -> DataType | None:
    """The table entry of a ``DataType`` number, or None for one that carries no values."""
    return DATATYPES.get(int(enum))


def tf_dtype_name(enum: int) -> str:
    """TensorFlow's ``DataTypeString`` (``float``, ``double``, ``string``, ``resource``, ``float_ref``).

    Example:
        >>> tf_dtype_name(1), tf_dtype_name(19), tf_dtype_name(20), tf_dtype_name(101), tf_dtype_name(99)
        ('float', 'half', 'resource', 'float_ref', 'dtype_99')
    """
    number = int(enum)
    entry = DATATYPES.get(number)
    if entry is not None:
        return entry.name
    if number > _REF_OFFSET:
        value = tf_dtype_name(number - _REF_OFFSET)
        if not value.startswith("dtype_") and value != "invalid":
            return f"{value}_ref"
    return _OTHER_NAMES.get(number, f"dtype_{number}")


def dtype_enum_name(enum: int) -> str:
    """The proto enum name of a ``DataType`` number (``DT_FLOAT``), as ``DataType_Name`` prints.

    Example:
        >>> dtype_enum_name(1), dtype_enum_name(0), dtype_enum_name(99), dtype_enum_name(101)
        ('DT_FLOAT', 'DT_INVALID', 'DT_99', 'DT_FLOAT_REF')
    """
    name = tf_dtype_name(enum)
    return f"DT_{enum}" if name.startswith("dtype_") else "DT_" + name.upper()


def dtype_name(enum: int) -> str:
    """The numpy-style name tfship shows for a ``DataType`` (``float32``, ``string``).

    A type that carries no values has TensorFlow's name (``resource``, ``float_ref``).

    Example:
        >>> dtype_name(1), dtype_name(7), dtype_name(19), dtype_name(21), dtype_name(101)
        ('float32', 'string', 'float16', 'variant', 'float_ref')
    """
    entry = DATATYPES.get(int(enum))
    return entry.display if entry is not None else tf_dtype_name(enum)


def numpy_dtype(enum: int) -> np.dtype[Any]:
    """The numpy dtype that stores a ``DataType``'s values (``KeyError`` for none).

    Example:
        >>> numpy_dtype(1), numpy_dtype(7)
        (dtype('float32'), dtype('O'))
    """
    name = DATATYPES[int(enum)].numpy
    if name == "bfloat16":
        import ml_dtypes  # ships with TensorFlow; only needed for bfloat16 tensors

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def enum_of_dtype(dtype: Any) -> int | None:
    """The ``DataType`` number of a numpy dtype (``object``, bytes and str are strings).

    Example:
        >>> enum_of_dtype(np.float32), enum_of_dtype(np.dtype("S3")), enum_of_dtype(np.dtype("V4"))
        (1, 7, None)
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "OSU":
        return DT_STRING
    return ENUM_OF_NUMPY.get("bfloat16" if dtype.name == "bfloat16" else dtype.name)


# -- status codes ------------------------------------------------------------------------------

# TF Serving's REST answer for each gRPC code (ToHTTPStatusCode in its HTTP handler); any other
# code is a 500.
HTTP_OF_CODE: dict[str, int] = {
    "OK": 200,
    "CANCELLED": 499,
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
# Read backwards by a REST client: where two codes share a status, the more common one.
CODE_OF_HTTP: dict[int, str] = {
    **{status: code for code, status in reversed(HTTP_OF_CODE.items())},
    400: "INVALID_ARGUMENT",
    409: "ABORTED",
}
del CODE_OF_HTTP[200]


def graph_name(key: str) -> str:
    r"""A name TensorFlow accepts for a graph op or scope, made from any feature or input key.

    Op and scope names must match ``[A-Za-z0-9.][A-Za-z0-9_.\-/]*``; a CSV header may hold
    anything (``mean radius``, ``od280/od315``). Signatures keep the user's keys; only the
    graph's internal names use this.

    Example:
        >>> graph_name("mean radius"), graph_name("_id"), graph_name("ok.name")
        ('mean_radius', 'f_id', 'ok.name')
    """
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", key)
    return name if re.match(r"[A-Za-z0-9.]", name) else f"f{name}"


def http_status(code: str) -> int:
    """TF Serving's HTTP status for a gRPC code name (500 for the rest).

    Example:
        >>> http_status("NOT_FOUND"), http_status("INTERNAL")
        (404, 500)
    """
    return HTTP_OF_CODE.get(code, 500)


# -- versions on disk ----------------------------------------------------------------------------


def version_number(name: str) -> int | None:
    """The version a directory name stands for, or None when it is not a version.

    TF Serving takes the children of a base path whose names are whole numbers that fit an
    int64; staging directories (``.tmp-...``), ``1.bak`` or ``v2`` are not versions.

    Example:
        >>> version_number("1700000000"), version_number("007"), version_number(".tmp-3")
        (1700000000, 7, None)
    """
    if name.isascii() and name.isdigit() and int(name) <= _INT64_MAX:
        return int(name)
    return None


def version_dirs(base: str | os.PathLike[str], *, strict: bool = False) -> list[tuple[int, Path]]:
    """The version directories under a model's base path, by version number then name.

    Two names for one number (``7`` and ``007``) are both listed; a missing or unreadable base
    path has none, unless ``strict``: then the ``OSError`` is raised, so that a caller can
    tell "no versions" from "cannot tell" (a full descriptor table, a flaky network mount).

    Example:
        >>> version_dirs("no/such/base")
        []
    """
    try:
        entries = list(os.scandir(base))
    except OSError:
        if strict:
            raise
        return []
    found = []
    for entry in entries:
        number = version_number(entry.name)
        if number is not None and entry.is_dir():
            found.append((number, Path(entry.path)))
    return sorted(found, key=lambda item: (item[0], item[1].name))


def version_numbers(base: str | os.PathLike[str]) -> list[int]:
    """The version numbers under a model's base path, oldest first, each once.

    What TF Serving considers: ``7`` and ``007`` are one version; a missing base path has none.

    Example:
        >>> version_numbers("no/such/base")
        []
    """
    return sorted({number for number, _ in version_dirs(base)})
