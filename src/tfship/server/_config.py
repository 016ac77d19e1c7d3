"""What the local server serves: models, base paths, version policies and labels.

The options mirror TensorFlow Serving's: one model from ``--model_base_path``/``--model_name``,
or several from a ``model_config_list`` text proto (``--model_config_file``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfship.server._status import ServerConfigError

_POLICY = re.compile(r"^(latest(?::(\d+))?|all|specific:([0-9][0-9,\s]*))$")


@dataclass(frozen=True)
class VersionPolicy:
    """Which numeric versions under a base path are served (TF Serving's ServableVersionPolicy).

    Example:
        >>> VersionPolicy.parse("latest:2").choose([1, 2, 3])
        [2, 3]
        >>> VersionPolicy.parse("specific:1,3").choose([1, 2, 3])
        [1, 3]
    """

    kind: str = "latest"
    num_versions: int = 1
    versions: tuple[int, ...] = ()

    @classmethod
    def parse(cls, text: str) -> VersionPolicy:
        """Read ``latest``, ``latest:N``, ``all`` or ``specific:V[,V...]``."""
        match = _POLICY.match(text.strip())
        if match is None:
            raise ServerConfigError(
                f"version policy {text!r}: expected one of latest, latest:N, all, "
                "specific:V[,V...] (e.g. latest:2, specific:1,3)"
            )
        if match.group(1).startswith("latest"):
            count = int(match.group(2) or 1)
            # TF Serving treats num_versions below 1 as 1.
            return cls("latest", num_versions=max(count, 1))
        if match.group(1) == "all":
            return cls("all")
        numbers = [v for v in re.split(r"[,\s]+", match.group(3)) if v]
        return cls("specific", versions=tuple(sorted({int(v) for v in numbers})))

    @classmethod
    def from_proto(cls, proto: Any) -> VersionPolicy:
        """From a ``FileSystemStoragePathSourceConfig.ServableVersionPolicy`` message."""
        which = proto.WhichOneof("policy_choice")
        if which == "all":
            return cls("all")
        if which == "specific":
            return cls("specific", versions=tuple(sorted(set(proto.specific.versions))))
        if which == "latest":
            return cls("latest", num_versions=max(int(proto.latest.num_versions), 1))
        return cls()

    def choose(self, available: Iterable[int]) -> list[int]:
        """The versions to serve among those found on disk, ascending."""
        found = sorted(set(available))
        if self.kind == "all":
            return found
        if self.kind == "specific":
            return [v for v in found if v in self.versions]
        return found[-self.num_versions :] if found else []

    def __str__(self) -> str:
        if self.kind == "latest":
            return "latest" if self.num_versions == 1 else f"latest:{self.num_versions}"
        if self.kind == "specific":
            return "specific:" + ",".join(str(v) for v in self.versions)
        return "all"


@dataclass(frozen=True)
class ModelConfig:
    """One served model: its name, base path (numeric version sub-directories), policy, labels.

    Example:
        >>> ModelConfig("penguins", "/srv/models/penguins", labels={"stable": 3}).name
        'penguins'
    """

    name: str
    base_path: str
    policy: VersionPolicy = field(default_factory=VersionPolicy)
    labels: Mapping[str, int] = field(default_factory=dict)


def single_model(name: str, base_path: str | os.PathLike[str], policy: str) -> ModelConfig:
    """The one-model configuration of ``--model_name``/``--model_base_path``/``--version-policy``."""
    if not name:
        raise ServerConfigError("model name: expected a non-empty name")
    return ModelConfig(name, str(Path(base_path).resolve()), VersionPolicy.parse(policy))


def from_config_list(proto: Any, *, where: str = "model config") -> list[ModelConfig]:
    """Models from a ``ModelConfigList`` message, validated as TF Serving validates them."""
    seen: set[str] = set()
    models: list[ModelConfig] = []
    for entry in proto.config:
        if entry.name in seen:
            raise ServerConfigError(
                f"{where}: Illegal to list model {entry.name} multiple times in config list"
            )
        seen.add(entry.name)
        if not entry.name:
            raise ServerConfigError(f"{where}: a config entry has no name")
        if entry.model_platform not in ("", "tensorflow"):
            raise ServerConfigError(
                f"{where}: model {entry.name}: model_platform {entry.model_platform!r} is not "
                "supported; expected 'tensorflow'"
            )
        if not os.path.isabs(entry.base_path):
            raise ServerConfigError(
                f"{where}: Expected model {entry.name} to have an absolute path or URI; got "
                f"base_path()={entry.base_path}"
            )
        models.append(
            ModelConfig(
                entry.name,
                entry.base_path,
                VersionPolicy.from_proto(entry.model_version_policy),
                dict(entry.version_labels),
            )
        )
    return models


def read_config_file(path: str | os.PathLike[str]) -> list[ModelConfig]:
    """Read a ``ModelServerConfig`` text proto holding a ``model_config_list``.

    The file TF Serving's ``--model_config_file`` names, validated as TF Serving validates it
    (a ``ServerConfigError`` says what is wrong and where). Example file::

        model_config_list {
          config { name: "penguins" base_path: "/srv/penguins"
                   model_version_policy { all {} }
                   version_labels { key: "stable" value: 1 } }
        }

    Example:
        >>> models = read_config_file("/srv/models.config")  # doctest: +SKIP
        >>> options = ServerOptions(model_config_file="/srv/models.config", model_config_poll_seconds=5)
        >>> ModelServer(models, options).start()  # doctest: +SKIP
    """
    from tensorflow_serving.config import model_server_config_pb2

    config = model_server_config_pb2.ModelServerConfig()
    parse_text_file(path, config)
    if config.WhichOneof("config") != "model_config_list":
        raise ServerConfigError(f"{path}: expected a model_config_list {{ config {{ ... }} }}")
    return from_config_list(config.model_config_list, where=str(path))


def parse_text_file(path: str | os.PathLike[str], message: Any) -> None:
    """Fill ``message`` from a text proto file; errors read as TF Serving's start-up errors.

    TF Serving logs protobuf's own text-format error (``Error parsing text-format
    tensorflow.serving.ModelServerConfig: 2:3: Expected ...``) and then fails with
    ``Invalid protobuf file: '<path>'``; the one-line error says both.
    """
    from google.protobuf import text_format

    text = _read_text(Path(path))
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        where = f"{exc.GetLine()}:{exc.GetColumn()}: " if exc.GetLine() is not None else ""
        detail = re.sub(r"^\d+:\d+ : ", "", str(exc))
        raise ServerConfigError(
            f"Error parsing text-format {message.DESCRIPTOR.full_name}: {where}{detail}; "
            f"Invalid protobuf file: '{path}'"
        ) from exc


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ServerConfigError(f"{path}: cannot read model config file: {exc.strerror}") from exc


@dataclass(frozen=True)
class SslConfig:
    """TLS for the gRPC API, as TF Serving's ``--ssl_config_file`` (an ``SSLConfig``) holds it.

    PEM texts, not paths; ``client_verify`` asks clients for a certificate signed by
    ``custom_ca`` (mutual TLS). Give it to ``ServerOptions(tls=...)``.

    Example:
        >>> SslConfig(server_key="-----BEGIN PRIVATE KEY-----...", server_cert="...").client_verify
        False
    """

    server_key: str
    server_cert: str
    custom_ca: str = ""
    client_verify: bool = False


def _message_class(name: str) -> Any:
    """A proto3 message class of TF Serving's package whose generated module is not shipped.

    ``_MESSAGES`` lists each message's fields (name, type, message type) in number order.
    tensorflow-serving-api lacks ``ssl_config_pb2`` and ``monitoring_config_pb2``, so the
    same messages are built here and files are read with protobuf's text format rules.
    """
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(
        name=f"tfship_{name.lower()}.proto", package="tensorflow.serving", syntax="proto3"
    )
    from google.protobuf import wrappers_pb2

    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    repeated = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    proto.dependency.append("google/protobuf/wrappers.proto")
    for message_name, message_fields in _MESSAGES[name]:
        message = proto.message_type.add(name=message_name)
        for field_name, number, kind, type_name in message_fields:
            label = repeated if kind == _REPEATED_INT64 else optional
            kind = 3 if kind == _REPEATED_INT64 else kind
            entry = message.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                entry.type_name = type_name if "." in type_name else f".tensorflow.serving.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.serving.{name}"))


_STRING, _BOOL, _MESSAGE, _REPEATED_INT64 = 9, 8, 11, -3
_INT64_VALUE, _BOOL_VALUE = ".google.protobuf.Int64Value", ".google.protobuf.BoolValue"
_MESSAGES: dict[str, list[tuple[str, list[tuple[str, int, int, str | None]]]]] = {
    "SSLConfig": [
        ("SSLConfig", [("server_key", 1, _STRING, None), ("server_cert", 2, _STRING, None),
                       ("custom_ca", 3, _STRING, None), ("client_verify", 4, _BOOL, None)]),
    ],
    "MonitoringConfig": [
        ("PrometheusConfig", [("enable", 1, _BOOL, None), ("path", 2, _STRING, None)]),
        ("MonitoringConfig", [("prometheus_config", 1, _MESSAGE, "PrometheusConfig")]),
    ],
    # session_bundle_config.proto of TF Serving 2.15.1
    "BatchingParameters": [
        ("BatchingParameters", [
            ("max_batch_size", 1, _MESSAGE, _INT64_VALUE),
            ("batch_timeout_micros", 2, _MESSAGE, _INT64_VALUE),
            ("max_enqueued_batches", 3, _MESSAGE, _INT64_VALUE),
            ("num_batch_threads", 4, _MESSAGE, _INT64_VALUE),
            ("thread_pool_name", 5, _MESSAGE, ".google.protobuf.StringValue"),
            ("allowed_batch_sizes", 6, _REPEATED_INT64, None),
            ("pad_variable_length_inputs", 7, _BOOL, None),
            ("enable_large_batch_splitting", 8, _MESSAGE, _BOOL_VALUE),
            ("max_execution_batch_size", 9, _MESSAGE, _INT64_VALUE),
        ]),
    ],
}


def read_batching_parameters(path: str | os.PathLike[str], defaults: Any) -> Any:
    """``--batching_parameters_file``: a ``BatchingParameters`` text proto over ``defaults``.

    ``max_batch_size`` and ``batch_timeout_micros`` shape the batching; the thread and queue
    settings have no counterpart here and are read but not used.
    """
    from dataclasses import replace

    message = message_class("BatchingParameters")()
    parse_text_file(path, message)
    options = defaults
    if message.HasField("max_batch_size"):
        if message.max_batch_size.value < 1:
            raise ServerConfigError(f"{path}: max_batch_size must be positive")
        options = replace(options, max_batch_size=int(message.max_batch_size.value))
    if message.HasField("batch_timeout_micros"):
        options = replace(options, batch_timeout_s=message.batch_timeout_micros.value / 1e6)
    return options


def parse_grpc_arguments(text: str) -> tuple[tuple[str, int | str], ...]:
    """``--grpc_channel_arguments``: ``key=value`` pairs, comma separated (ints stay ints).

    Example:
        >>> parse_grpc_arguments("grpc.max_concurrent_streams=100,grpc.primary_user_agent=x")
        (('grpc.max_concurrent_streams', 100), ('grpc.primary_user_agent', 'x'))
    """
    pairs: list[tuple[str, int | str]] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ServerConfigError(
                f"gRPC channel argument {item!r}: expected key=value, e.g. "
                "grpc.max_concurrent_streams=100"
            )
        number = value.lstrip("-")
        pairs.append((key, int(value) if number.isdigit() else value))
    return tuple(pairs)


def message_class(name: str) -> Any:
    """``SSLConfig`` or ``MonitoringConfig`` (TF Serving's messages), built once."""
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = _message_class(name)
    return cls


_CLASSES: dict[str, Any] = {}


def read_ssl_config(path: str | os.PathLike[str]) -> SslConfig:
    """Read an ``SSLConfig`` text proto (server_key, server_cert, custom_ca, client_verify)."""
    message = message_class("SSLConfig")()
    parse_text_file(path, message)
    if not message.server_key or not message.server_cert:
        raise ServerConfigError(f"{path}: an SSLConfig needs server_key and server_cert (PEM)")
    if message.client_verify and not message.custom_ca:
        raise ServerConfigError(f"{path}: client_verify needs custom_ca to check clients against")
    return SslConfig(message.server_key, message.server_cert, message.custom_ca,
                     message.client_verify)
