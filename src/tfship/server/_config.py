"""What the local server serves: models, base paths, version policies and labels.

The options mirror TensorFlow Serving's: one model from ``--model_base_path``/``--model_name``,
or several from a ``model_config_list`` text proto (``--model_config_file``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfship._wire import ModelConfigList, descriptor_pool, message_class, protos
from tfship.server._request_log import LoggingSettings, logging_settings
from tfship.server._status import ServerConfigError

if TYPE_CHECKING:
    from google.protobuf.message import Message

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
    #: the model's ``logging_config`` (its request log), checked; None: not logged
    logging: LoggingSettings | None = None


def logging_by_model(models: Iterable[ModelConfig]) -> dict[str, LoggingSettings]:
    """The request log settings of the models that have one, by model name."""
    return {m.name: m.logging for m in models if m.logging is not None}


def single_model(name: str, base_path: str | os.PathLike[str], policy: str) -> ModelConfig:
    """The one-model configuration of ``--model_name``/``--model_base_path``/``--version-policy``."""
    if not name:
        raise ServerConfigError("model name: expected a non-empty name")
    return ModelConfig(name, str(Path(base_path).resolve()), VersionPolicy.parse(policy))


def from_config_list(proto: ModelConfigList, *, where: str = "model config") -> list[ModelConfig]:
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
        if entry.model_type:  # deprecated; TF Serving still reads it (server_core.cc GetPlatform)
            if entry.model_platform:
                raise ServerConfigError(
                    f"{where}: Illegal setting both ModelServerConfig::model_type (deprecated) and "
                    f"ModelServerConfig::model_platform, model name is {entry.name}"
                )
            if entry.model_type != 1:  # TENSORFLOW
                raise ServerConfigError(
                    f"{where}: model {entry.name}: ModelServerConfig::model_type choice "
                    f"{entry.model_type} not supported."
                )
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
                _logging_of(entry, where),
            )
        )
    return models


def _logging_of(entry: Any, where: str) -> LoggingSettings | None:
    if not entry.HasField("logging_config"):
        return None
    return logging_settings(entry.logging_config, where=f"{where}: model {entry.name}")


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
        >>> from pathlib import Path
        >>> _ = Path("models.config").write_text(
        ...     'model_config_list { config { name: "penguins" base_path: "/srv/penguins" } }')
        >>> [(m.name, m.base_path, m.policy.kind) for m in read_config_file("models.config")]
        [('penguins', '/srv/penguins', 'latest')]
    """
    config = protos().model_server_config_pb2.ModelServerConfig()
    parse_text_file(path, config)
    if config.WhichOneof("config") != "model_config_list":
        raise ServerConfigError(f"{path}: expected a model_config_list {{ config {{ ... }} }}")
    return from_config_list(config.model_config_list, where=str(path))


def parse_text_file(path: str | os.PathLike[str], message: Message) -> None:
    """Fill ``message`` from a text proto file; errors read as TF Serving's start-up errors.

    TF Serving logs protobuf's own text-format error (``Error parsing text-format
    tensorflow.serving.ModelServerConfig: 2:3: Expected ...``) and then fails with
    ``Invalid protobuf file: '<path>'``; the one-line error says both.
    """
    from google.protobuf import text_format

    text = _read_text(Path(path))
    try:
        # the pool resolves an Any written by its type URL (custom_model_config)
        text_format.Parse(text, message, descriptor_pool=descriptor_pool())
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


# the BatchingParameters fields tfship's batching honours
_BATCHING_USED = frozenset({"max_batch_size", "batch_timeout_micros"})


def read_batching_parameters(path: str | os.PathLike[str], defaults: Any) -> Any:
    """``--batching_parameters_file``: a ``BatchingParameters`` text proto over ``defaults``.

    ``max_batch_size`` and ``batch_timeout_micros`` shape the batching; the thread, queue and
    padding settings have no counterpart here: they are read, not used, and a warning names them
    (they tune TF Serving's batch scheduler and change no answer).
    """
    from dataclasses import replace

    message = serving_message_class("BatchingParameters")()
    parse_text_file(path, message)
    unused = [f.name for f, _ in message.ListFields() if f.name not in _BATCHING_USED]
    if unused:
        logging.getLogger(__name__).warning(
            "%s: %s: no counterpart in tfship serve's batching; read, not used", path, ", ".join(unused)
        )
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
                f"gRPC channel argument {item!r}: expected key=value, e.g. grpc.max_concurrent_streams=100"
            )
        number = value.lstrip("-")
        pairs.append((key, int(value) if number.isdigit() else value))
    return tuple(pairs)


def serving_message_class(name: str) -> type[Message]:
    """A message class of TF Serving's package: ``SSLConfig``, ``MonitoringConfig``,
    ``BatchingParameters`` (tensorflow-serving-api ships none of them)."""
    cls: type[Message] = message_class(f"tensorflow.serving.{name}")
    return cls


def read_ssl_config(path: str | os.PathLike[str]) -> SslConfig:
    """Read an ``SSLConfig`` text proto (server_key, server_cert, custom_ca, client_verify)."""
    message = serving_message_class("SSLConfig")()
    parse_text_file(path, message)
    if not message.server_key or not message.server_cert:
        raise ServerConfigError(f"{path}: an SSLConfig needs server_key and server_cert (PEM)")
    if message.client_verify and not message.custom_ca:
        raise ServerConfigError(f"{path}: client_verify needs custom_ca to check clients against")
    return SslConfig(message.server_key, message.server_cert, message.custom_ca, message.client_verify)
