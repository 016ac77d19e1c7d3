"""tfship's own protobuf message classes, built at run time from a shipped descriptor set.

The ``.proto`` sources under ``_wire/proto/`` declare the messages tfship reads and writes,
under the full names TensorFlow and TF Serving use (``tensorflow.serving.PredictRequest``,
``tensorflow.MetaGraphDef``, ...), so the bytes, ``Any`` type URLs and gRPC method paths are
the same. ``make protos`` compiles them into one ``FileDescriptorSet`` (imports included),
``_wire/proto/descriptors.pb``, which the package ships.

Generated ``_pb2`` modules work only with the protobuf major they were made for (and the next
one); classes made from descriptors at run time work on every protobuf from 3.20 to 7.x. They
live in a private ``DescriptorPool``, so they never clash with TensorFlow's own classes of the
same names in the same process: the two kinds exchange bytes, not objects.

Every module of tfship gets its message classes here: :func:`protos` is the one door, a
namespace named after the generated modules callers know (``protos().predict_pb2.PredictRequest``);
:func:`ours` brings a message of another class (TensorFlow's, a user's) across by its bytes.
"""

from __future__ import annotations

import difflib
import importlib.resources
import threading
from types import SimpleNamespace
from typing import Any

from tfship.errors import TfshipError

__all__ = [
    "DESCRIPTOR_SET",
    "descriptor_pool",
    "descriptor_set_bytes",
    "is_message",
    "message_class",
    "ours",
    "protos",
]

DESCRIPTOR_SET = "proto/descriptors.pb"  # inside the tfship._wire package

_lock = threading.Lock()
_pool: Any = None
_factory: Any = None  # protobuf 3.20: the one MessageFactory, so each message has one class
_names: tuple[str, ...] = ()
_classes: dict[str, Any] = {}
_enum_values: dict[str, int] = {}  # "package.NAME" -> number, for top-level enums' values
_namespace: Any = None


def descriptor_set_bytes() -> bytes:
    """The serialized ``FileDescriptorSet`` that tfship ships, as compiled by ``make protos``.

    Raises:
        TfshipError: the file is missing from the installation.

    Example:
        >>> len(descriptor_set_bytes()) > 0
        True
    """
    resource = importlib.resources.files("tfship._wire").joinpath(DESCRIPTOR_SET)
    try:
        return resource.read_bytes()
    except OSError as exc:
        raise TfshipError(
            f"tfship's message descriptors are missing ({DESCRIPTOR_SET} in tfship._wire): reinstall tfship"
        ) from exc


def descriptor_pool() -> Any:
    """The private ``DescriptorPool`` holding tfship's messages, enums and services.

    Loaded once, on first use, by whichever thread asks first.

    Example:
        >>> descriptor_pool().FindEnumTypeByName("tensorflow.DataType").values_by_name["DT_FLOAT"].number
        1
    """
    if _pool is None:
        _load()
    return _pool


def message_class(full_name: str) -> Any:
    """The message class of a full protobuf name, e.g. ``tensorflow.serving.PredictRequest``.

    Raises:
        ValueError: the name is not one of tfship's messages (the message names the closest).

    Example:
        >>> request = message_class("tensorflow.serving.PredictRequest")()
        >>> request.model_spec.name = "penguins"
        >>> request.SerializeToString()
        b'\\n\\n\\n\\x08penguins'
    """
    cls = _classes.get(full_name)
    if cls is not None:
        return cls
    pool = descriptor_pool()
    with _lock:
        cls = _classes.get(full_name)
        if cls is None:
            try:
                descriptor = pool.FindMessageTypeByName(full_name)
            except KeyError:
                raise ValueError(_unknown(full_name)) from None
            cls = _classes[full_name] = _class_of(descriptor)
    return cls


def _load() -> None:
    global _pool, _factory, _names
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    with _lock:
        if _pool is not None:
            return
        files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set_bytes()).file
        pool = descriptor_pool.DescriptorPool()
        for file in files:  # protoc writes each file after the files it imports
            pool.AddSerializedFile(file.SerializeToString())
        _names = tuple(sorted(_message_names(files)))
        for file in files:
            for enum in file.enum_type:
                for value in enum.value:
                    _enum_values[f"{file.package}.{value.name}"] = value.number
        if not hasattr(message_factory, "GetMessageClass"):
            _factory = message_factory.MessageFactory(pool)
        _pool = pool


def _message_names(files: Any) -> list[str]:
    names: list[str] = []

    def walk(prefix: str, messages: Any) -> None:
        for message in messages:
            if not message.options.map_entry:
                names.append(f"{prefix}.{message.name}")
                walk(f"{prefix}.{message.name}", message.nested_type)

    for file in files:
        walk(file.package, file.message_type)
    return names


def _class_of(descriptor: Any) -> Any:
    if _factory is not None:  # protobuf 3.20
        return _factory.GetPrototype(descriptor)
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(descriptor)


def _unknown(full_name: str) -> str:
    close = difflib.get_close_matches(full_name, _names, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"no message {full_name!r} among tfship's protobuf messages{hint}"


class _Package:
    """One protobuf package seen as a generated module: its messages, enums and enum values by
    name, resolved on first use and kept."""

    def __init__(self, package: str) -> None:
        self._package = package

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        full_name = f"{self._package}.{name}"
        pool = descriptor_pool()
        value: Any
        if full_name in _enum_values:
            value = _enum_values[full_name]
        else:
            try:
                value = message_class(full_name)
            except ValueError:
                try:
                    descriptor = pool.FindEnumTypeByName(full_name)
                except KeyError:
                    raise AttributeError(
                        f"no message, enum or enum value {full_name!r} among tfship's protobuf messages"
                    ) from None
                from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

                value = EnumTypeWrapper(descriptor)
        setattr(self, name, value)
        return value


# The names callers use, after the generated modules that hold these messages in TensorFlow and
# TF Serving, and the protobuf package each one reads from.
_MODULES = {
    "example_pb2": "tensorflow",
    "tensor_pb2": "tensorflow",
    "tensor_shape_pb2": "tensorflow",
    "types_pb2": "tensorflow",
    "meta_graph_pb2": "tensorflow",
    "saved_model_pb2": "tensorflow",
    "tensor_bundle_pb2": "tensorflow",
    "classification_pb2": "tensorflow.serving",
    "get_model_metadata_pb2": "tensorflow.serving",
    "get_model_status_pb2": "tensorflow.serving",
    "inference_pb2": "tensorflow.serving",
    "input_pb2": "tensorflow.serving",
    "model_management_pb2": "tensorflow.serving",
    "model_pb2": "tensorflow.serving",
    "predict_pb2": "tensorflow.serving",
    "prediction_log_pb2": "tensorflow.serving",
    "regression_pb2": "tensorflow.serving",
    "model_server_config_pb2": "tensorflow.serving",
    "health_pb2": "grpc.health.v1",
    "grpc_service_pb2": "inference",  # the Open Inference Protocol's (KServe V2)
}


def protos() -> Any:
    """The namespace every module takes its message classes from: tfship's own classes, under
    the names of the generated modules that hold them in TensorFlow and TF Serving.

    Example:
        >>> pb = protos()
        >>> pb.tensor_pb2.TensorProto().dtype, pb.types_pb2.DT_FLOAT
        (0, 1)
        >>> pb.types_pb2.DataType.Name(7)
        'DT_STRING'
    """
    global _namespace
    if _namespace is None:
        packages = {package: _Package(package) for package in set(_MODULES.values())}
        _namespace = SimpleNamespace(**{key: packages[package] for key, package in _MODULES.items()})
    return _namespace


def is_message(value: Any, full_name: str) -> bool:
    """Whether ``value`` is a protobuf message of ``full_name``, of any class (tfship's,
    TensorFlow's, one a user generated).

    Example:
        >>> is_message(protos().model_pb2.ModelSpec(), "tensorflow.serving.ModelSpec")
        True
        >>> is_message(b"", "tensorflow.serving.ModelSpec")
        False
    """
    descriptor = getattr(value, "DESCRIPTOR", None)
    return getattr(descriptor, "full_name", None) == full_name and hasattr(value, "SerializeToString")


def ours(message: Any) -> Any:
    """``message`` as tfship's class of the same full name: itself when it is one, otherwise
    parsed from its bytes (a message of TensorFlow's classes, or of a user's).

    Raises:
        ValueError: tfship has no message of that name.

    Example:
        >>> spec = protos().model_pb2.ModelSpec(name="m")
        >>> ours(spec) is spec
        True
    """
    cls = message_class(message.DESCRIPTOR.full_name)
    if type(message) is cls:
        return message
    return cls.FromString(message.SerializeToString())


def unset_fields_printed() -> dict[str, bool]:
    """The option that prints fields left unset, as TF Serving's ``always_print_primitive_fields``.

    protobuf 5.26 renamed ``including_default_value_fields`` to
    ``always_print_fields_with_no_presence``. The two differ only on scalars with presence
    (proto2 ``optional``, proto3 ``optional``); the messages written here (model status, model
    spec, signature map) have none, so both print the same fields: every scalar, list and map,
    never an unset message or oneof member.
    """
    import inspect

    from google.protobuf import json_format

    if "always_print_fields_with_no_presence" in inspect.signature(json_format.MessageToJson).parameters:
        return {"always_print_fields_with_no_presence": True}
    return {"including_default_value_fields": True}
