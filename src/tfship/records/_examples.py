"""The one builder of ``tf.train.Example`` from a record, fed by interchangeable typing rules.

A record (a dict of feature name to value) becomes an Example in one place, :func:`to_example`.
What differs between callers is only how a value is typed: which list of a ``tf.train.Feature``
(``bytes_list``, ``int64_list``, ``float_list``) it goes to, and what it becomes there. That
choice is a *typing rule*, any object with the :class:`Typing` method:

- :class:`ByValue`: by the Python type of each value (the client's rule for a plain dict);
- :class:`ByFields`: by declared :class:`Field` s, a parse spec's (:func:`parse_spec_fields`) or
  a parsing signature's, with defaults and the one value rule of :func:`tfship.schema.field_values`;
- :class:`BySchema`: by a :class:`tfship.schema.Schema`, its defaults, label and CSV rule;
- :class:`ByJson`: TF Serving's REST rule for a JSON object (MakeExampleFromJsonObject), with
  its error texts, byte for byte.

The messages are tfship's own classes (``tfship._wire.protos()``); no TensorFlow is imported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tfship._values import CsvMissing, field_values
from tfship._wire import (
    Example,
    Input,
    JsonError,
    b64_decode,
    error_json_text,
    is_b64,
    is_message,
    json_type,
    lossless_float32,
    ours,
    protos,
)
from tfship.errors import DataError, value_text
from tfship.records._fields import Field
from tfship.schema import Schema

__all__ = [
    "ByFields",
    "ByJson",
    "BySchema",
    "ByValue",
    "FeatureValues",
    "Typing",
    "examples_from_json",
    "fill_example",
    "parse_spec_fields",
    "to_example",
]

BYTES, INT64, FLOAT = "bytes_list", "int64_list", "float_list"

FeatureValues = tuple[str, str | None, list[Any]]
"""One feature of an Example: its name, its list (``bytes_list``, ``int64_list``,
``float_list``, or ``None`` for a feature with no list set) and the values that list holds."""


class Typing(Protocol):
    """A typing rule: what each feature of a record becomes in a ``tf.train.Example``."""

    def features(self, record: Mapping[str, Any], where: str) -> Iterable[FeatureValues]:
        """The record's features as ``(name, list, values)``, values ready for that list.

        Raises the caller's error for a record it cannot type, naming ``where`` (the record)
        and the feature.
        """
        ...


# ---- the builder -------------------------------------------------------------------------------
def to_example(
    record: Mapping[str, Any] | Example | bytes, typing: Typing | None = None, *, where: str = ""
) -> Example:
    """A ``tf.train.Example`` from a record, its values typed by ``typing`` (``ByValue()``).

    A record that already is an Example (tfship's class or TensorFlow's) comes back as
    tfship's; bytes are parsed as a serialized Example.

    Args:
        record: a dict of feature name to value, an Example, or its serialized bytes.
        typing: the typing rule; ``None`` types by Python value (:class:`ByValue`).
        where: the record, for error messages (``file.csv:12``, ``example 3``).

    Raises:
        DataError: naming the record and the feature (``ByJson`` raises ``JsonError``).

    Example:
        >>> ex = to_example({"n": 3, "w": [0.5, 1.5], "s": "a"})
        >>> ex.features.feature["w"].float_list.value[:], ex.features.feature["n"].int64_list.value[:]
        ([0.5, 1.5], [3])
    """
    example_cls = protos().example_pb2.Example
    if is_message(record, "tensorflow.Example"):
        return ours(record)
    if isinstance(record, (bytes, bytearray)):
        from google.protobuf.message import DecodeError

        try:
            return example_cls.FromString(bytes(record))
        except DecodeError:
            raise DataError(f"{_at(where)}the bytes are not a serialized tf.train.Example") from None
    return fill_example(example_cls(), record, typing, where=where)


def fill_example(
    example: Example, record: Mapping[str, Any], typing: Typing | None = None, *, where: str = ""
) -> Example:
    """Fill an empty ``tf.train.Example`` (one in a request, say) from a record; returns it.

    Example:
        >>> ex = fill_example(protos().example_pb2.Example(), {"x": 1.5}, ByFields([
        ...     Field("x", "float32", ())]))
        >>> ex.features.feature["x"].float_list.value[:]
        [1.5]
    """
    features = example.features.feature
    for name, kind, values in (typing or _BY_VALUE).features(record, where):
        feature = features[name]
        if kind is None:
            continue
        target = getattr(feature, kind)
        target.SetInParent()  # an empty list still says which kind the feature is
        try:
            target.value.extend(values)
        except (TypeError, ValueError) as exc:  # a rule let through what protobuf refuses
            raise DataError(f"{_at(where)}feature {name!r}: {exc}") from None
    return example


def _at(where: str) -> str:
    return f"{where}: " if where else ""


def _mapping(record: object, where: str) -> Mapping[Any, Any]:
    if isinstance(record, Mapping):
        return record
    if hasattr(record, "SerializeToString"):  # another message would parse as an Example silently
        kind = getattr(getattr(record, "DESCRIPTOR", None), "full_name", type(record).__name__)
        raise DataError(f"{_at(where)}a record must be a dict or tf.train.Example, got a {kind} message")
    raise DataError(f"{_at(where)}a record must be a dict or tf.train.Example, got {type(record).__name__}")


def _strings(values: Iterable[Any]) -> list[bytes]:
    return [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]


# ---- by Python value ---------------------------------------------------------------------------
_KIND_NAMES = {BYTES: "strings", INT64: "integers", FLOAT: "floats"}


@dataclass(frozen=True)
class ByValue:
    """Types each value by its Python type: str/bytes -> bytes, int/bool -> int64, float -> float.

    A value is a scalar, a flat list or a numpy array; ``None`` or an empty list leaves the
    feature out (a variable-length feature reads it as empty).

    Example:
        >>> ex = to_example({"ok": True, "id": b"\\x01"}, ByValue())
        >>> ex.features.feature["ok"].int64_list.value[:], ex.features.feature["id"].bytes_list.value[:]
        ([1], [b'\\x01'])
    """

    def features(self, record: object, where: str) -> Iterator[FeatureValues]:
        for key, value in _mapping(record, where).items():
            name = str(key)
            values = _flat(value)
            if not values:
                continue
            kinds = {_kind_of(name, v, where) for v in values}
            if len(kinds) > 1:
                mixed = " and ".join(sorted(_KIND_NAMES[k] for k in kinds))
                raise DataError(f"{_at(where)}feature {name!r}: values {value_text(values)} mix {mixed}")
            kind = kinds.pop()
            yield name, kind, _typed_by_value(name, kind, values, where)


_BY_VALUE = ByValue()


def _flat(value: object) -> list[Any]:
    if isinstance(value, np.ndarray):
        return list(value.ravel().tolist())
    if isinstance(value, (list, tuple)):
        return list(value)
    if value is None:
        return []
    return [value]


def _kind_of(name: str, value: object, where: str) -> str:
    if isinstance(value, (str, bytes, bytearray, np.str_, np.bytes_)):
        return BYTES
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return INT64
    if isinstance(value, (float, np.floating)):
        return FLOAT
    raise DataError(
        f"{_at(where)}feature {name!r}: value {value_text(value)} of type {type(value).__name__} is not "
        "str, bytes, int, bool or float (a feature holds one value or a flat list of them)"
    )


def _typed_by_value(name: str, kind: str, values: list[Any], where: str) -> list[Any]:
    if kind == BYTES:
        return _strings(values)
    if kind == FLOAT:
        return [float(v) for v in values]
    too_big = [v for v in values if not -(2**63) <= int(v) < 2**63]
    if too_big:
        raise DataError(f"{_at(where)}feature {name!r}: {too_big[0]} is outside the range of int64")
    return [int(v) for v in values]


# ---- by declared fields ------------------------------------------------------------------------
def _list_of(dtype: str) -> str:
    if dtype == "string":
        return BYTES
    if dtype.startswith(("float", "bfloat", "half", "double")):
        return FLOAT
    if dtype.startswith(("int", "uint")) or dtype == "bool":
        return INT64
    raise ValueError(f"dtype {dtype!r} has no tf.train.Example list (string, float or int)")


class ByFields:
    """Types a record by declared fields: each field's dtype picks its list, its default fills
    a missing value, its shape checks the count, by :func:`tfship.schema.field_values`.

    Names the fields do not declare are left out, as parsing ignores them. ``csv`` is the
    missing-value rule of a CSV row (``None`` for typed records, where only null is missing).

    Example:
        >>> rule = ByFields([Field("age", "float32", ()), Field("tags", "string", None, sparse=True)])
        >>> rule.values({"age": "33", "tags": ["a", "b"]})
        {'age': [33.0], 'tags': ['a', 'b']}
    """

    def __init__(self, fields: Mapping[str, Field] | Iterable[Field], *, csv: CsvMissing | None = None):
        given = fields.values() if isinstance(fields, Mapping) else fields
        self.fields: dict[str, Field] = {f.name: f for f in given}
        self.csv = csv
        for f in self.fields.values():
            _list_of(f.dtype)  # refuse at once a field no Example can hold
        self._defaults = {name: _flat_default(f) for name, f in self.fields.items()}

    def __repr__(self) -> str:
        return f"ByFields({list(self.fields.values())!r}, csv={self.csv!r})"

    def values(self, record: object, where: str = "") -> dict[str, list[Any]]:
        """Each field's values for ``record``, as the field's Python type (str, float, int)."""
        row = _mapping(record, where)
        return {name: self._field_values(f, row.get(name), where) for name, f in self.fields.items()}

    def features(self, record: object, where: str) -> Iterator[FeatureValues]:
        for name, values in self.values(record, where).items():
            kind = _list_of(self.fields[name].dtype)
            yield name, kind, _strings(values) if kind == BYTES else values

    def _field_values(self, f: Field, value: object, where: str) -> list[Any]:
        shape = None if f.sparse or f.shape is None else f.shape
        try:
            return field_values(f.name, f.dtype, shape, self._defaults[f.name], value, self.csv)
        except ValueError as exc:
            # An Example holds features: name the value the way its reader knows it.
            text = str(exc)
            text = "feature " + text[len("field ") :] if text.startswith("field ") else text
            raise DataError(f"{_at(where)}{text}") from None


def _flat_default(f: Field) -> list[Any] | None:
    if f.default is None:
        return None
    values: list[Any] = np.asarray(f.default).reshape(-1).tolist()
    size = None if f.sparse or f.shape is None else math.prod(d or 1 for d in f.shape)
    if size is not None and len(values) == 1 and size > 1:
        values = values * size  # a scalar default fills every value of the feature
    return values


def parse_spec_fields(spec: Mapping[str, Any]) -> dict[str, Field]:
    """The :class:`Field` s of a parse spec (``{name: tf.io.FixedLenFeature(...)}``), read by
    attribute (``.shape``, ``.dtype.name``, ``.default_value``) without importing TensorFlow.

    ``FixedLenFeature`` is dense with its shape and default; ``VarLenFeature``,
    ``FixedLenSequenceFeature`` and ``RaggedFeature`` take any number of values.

    Raises:
        ValueError: a ``SparseFeature`` (give its keys as ``VarLenFeature`` s) or another object.
    """
    fields: dict[str, Field] = {}
    for name, feature in spec.items():
        kind = type(feature).__name__
        dtype = str(getattr(getattr(feature, "dtype", None), "name", ""))
        if kind == "FixedLenFeature":
            shape = tuple(None if d is None else int(d) for d in feature.shape)
            default = feature.default_value
            fields[name] = Field(name, dtype, shape, False, None if default is None else np.asarray(default))
        elif kind in ("VarLenFeature", "FixedLenSequenceFeature", "RaggedFeature"):
            fields[name] = Field(name, dtype, None, True)
        else:
            raise ValueError(
                f"parse spec feature {name!r} is a {kind}; expected FixedLenFeature, VarLenFeature, "
                "FixedLenSequenceFeature or RaggedFeature (a SparseFeature's keys are VarLenFeatures)"
            )
    return fields


# ---- by schema -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class BySchema:
    """Types a record by a :class:`tfship.schema.Schema`: its features' dtypes, shapes and
    defaults (``Schema.convert_record``), and its label when ``label`` is set
    (``Schema.convert_label``: vocabulary and kind checked). ``csv`` as for :class:`ByFields`.

    Example:
        >>> s = Schema.from_dict({"label": {"name": "y", "kind": "regression"},
        ...                       "features": [{"name": "x", "dtype": "float32", "default": 0.5}]})
        >>> ex = to_example({"y": 2}, BySchema(s, label=True))
        >>> ex.features.feature["x"].float_list.value[:], ex.features.feature["y"].float_list.value[:]
        ([0.5], [2.0])
    """

    schema: Schema
    label: bool = False
    csv: CsvMissing | None = None

    def features(self, record: object, where: str) -> Iterator[FeatureValues]:
        row = _mapping(record, where)
        values = self.schema.convert_record(row, where=where, csv=self.csv)
        dtypes = {f.name: f.dtype for f in self.schema.features}
        if self.label:
            label = self.schema.label
            values[label.name] = [self.schema.convert_label(row, where=where, csv=self.csv)]
            dtypes[label.name] = label.dtype
        for name, vals in values.items():
            kind = _list_of(dtypes[name])
            yield name, kind, _strings(vals) if kind == BYTES else vals


# ---- by JSON (TF Serving's REST API) -------------------------------------------------------------
_SHOWN = {BYTES: "bytes", FLOAT: "float", INT64: "int64"}
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class ByJson:
    """TF Serving's rule for one JSON object of a REST classify/regress body
    (MakeExampleFromJsonObject): strings and ``{"b64": ...}`` -> bytes, integers and booleans ->
    int64, other numbers -> float; a feature's values share one list. Errors are
    ``JsonError`` s with TF Serving's texts; ``where`` is not part of them.

    Example:
        >>> ex = to_example({"f": 1.5, "b": True, "raw": {"b64": "/w=="}}, ByJson())
        >>> ex.features.feature["b"].int64_list.value[:], ex.features.feature["raw"].bytes_list.value[:]
        ([1], [b'\\xff'])
    """

    def features(self, record: object, where: str) -> Iterator[FeatureValues]:
        if not isinstance(record, dict):
            raise JsonError(f"Example must be JSON object but got JSON {json_type(record)}")
        for name, content in record.items():
            kind: str | None = None
            values: list[Any] = []
            for item in content if isinstance(content, list) else [content]:
                item_kind = _json_kind(item, name)
                if kind not in (None, item_kind):
                    raise JsonError(
                        f"Unexpected element type in feature: {name} expecting type: {_SHOWN[kind]}"
                    )
                kind = item_kind
                values.append(_json_value(item, item_kind, name))
            yield name, kind, values


def _json_kind(value: object, name: str) -> str:
    # The checks run in TF Serving's order: the JSON type, the list kind, then the value.
    if value is None or isinstance(value, list) or (isinstance(value, dict) and not is_b64(value)):
        raise JsonError(f"Feature: {name} has element with unexpected JSON type: {json_type(value)}")
    if isinstance(value, (dict, str)):
        return BYTES
    return FLOAT if isinstance(value, float) else INT64


def _json_value(value: str | float | dict[str, Any], kind: str, name: str) -> bytes | int | float:
    # ``kind`` is _json_kind's: a string or a b64 object is bytes, a float a float, else int64
    if isinstance(value, dict):
        return b64_decode(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if kind == FLOAT:
        if not lossless_float32(value):
            raise JsonError(
                f"Cannot convert JSON value: {json.dumps(value)} to float without loss of precision."
            )
        return value
    if isinstance(value, bool):
        return int(value)
    if value > _INT64_MAX:
        raise JsonError(f"Feature: {name} has uint64 element. Only int64 is supported.")
    return value


_BY_JSON = ByJson()


def examples_from_json(doc: Mapping[str, Any], input_proto: Input) -> None:
    """Fill a Classification/RegressionRequest's ``input`` from a parsed REST body
    (``examples`` and an optional ``context``), by :class:`ByJson`, with TF Serving's errors.

    Example:
        >>> request = protos().classification_pb2.ClassificationRequest()
        >>> examples_from_json({"examples": [{"x": 1.5}, {"x": 2.5}]}, request.input)
        >>> len(request.input.example_list.examples)
        2
    """
    with_context = "context" in doc
    if with_context:
        fill_example(input_proto.example_list_with_context.context, doc["context"], _BY_JSON)
    if "examples" not in doc:
        raise JsonError(
            f"JSON Value: {error_json_text(doc)} When method is classify, key 'examples' is expected "
            "and was not found"
        )
    if not isinstance(doc["examples"], list):
        raise JsonError(f"JSON Value: {error_json_text(doc)} Expecting 'examples' value to be an list/array")
    if not doc["examples"]:
        raise JsonError(f"JSON Value: {error_json_text(doc)} 'examples' value is an empty array")
    target = (
        input_proto.example_list_with_context.examples if with_context else input_proto.example_list.examples
    )
    for item in doc["examples"]:
        fill_example(target.add(), item, _BY_JSON)
