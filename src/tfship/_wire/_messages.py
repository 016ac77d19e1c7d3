"""tfship's own protobuf message classes, built at run time from a shipped descriptor set.

The ``.proto`` sources under ``_wire/proto/`` declare the messages tfship reads and writes,
under the full names TensorFlow and TF Serving use (``tensorflow.serving.PredictRequest``,
``tensorflow.MetaGraphDef``, ...), so the bytes, ``Any`` type URLs and gRPC method paths are
the same. ``make protos`` compiles them into one ``FileDescriptorSet`` (imports included),
``_wire/proto/descriptors.pb``, which the package ships.

Generated ``_pb2`` modules work only with the protobuf major they were made for (and the next
one); classes made from descriptors at run time work on every protobuf from 3.20 to 6.x. They
live in a private ``DescriptorPool``, so they never clash with TensorFlow's own classes of the
same names in the same process: the two kinds exchange bytes, not objects.
"""

from __future__ import annotations

import difflib
import importlib.resources
import threading
from typing import Any

from tfship.errors import TfshipError

__all__ = ["DESCRIPTOR_SET", "descriptor_pool", "descriptor_set_bytes", "message_class"]

DESCRIPTOR_SET = "proto/descriptors.pb"  # inside the tfship._wire package

_lock = threading.Lock()
_pool: Any = None
_factory: Any = None  # protobuf 3.20: the one MessageFactory, so each message has one class
_names: tuple[str, ...] = ()
_classes: dict[str, Any] = {}


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
            f"tfship's message descriptors are missing ({DESCRIPTOR_SET} in tfship._wire): "
            "reinstall tfship"
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
