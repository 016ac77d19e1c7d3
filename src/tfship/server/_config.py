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
        raise ServerConfigError("--model-name: expected a non-empty model name")
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

    Example file::

        model_config_list {
          config { name: "penguins" base_path: "/srv/penguins"
                   model_version_policy { all {} }
                   version_labels { key: "stable" value: 1 } }
        }
    """
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    text = _read_text(Path(path))
    config = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        raise ServerConfigError(f"{path}: not a ModelServerConfig text proto: {exc}") from exc
    if config.WhichOneof("config") != "model_config_list":
        raise ServerConfigError(f"{path}: expected a model_config_list {{ config {{ ... }} }}")
    return from_config_list(config.model_config_list, where=str(path))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ServerConfigError(f"{path}: cannot read model config file: {exc.strerror}") from exc


def to_config_list(models: Iterable[ModelConfig]) -> Any:
    """A ``ModelServerConfig`` message holding these models (for HandleReloadConfigRequest)."""
    from tensorflow_serving.config import model_server_config_pb2

    config = model_server_config_pb2.ModelServerConfig()
    for model in models:
        entry = config.model_config_list.config.add(
            name=model.name, base_path=model.base_path, model_platform="tensorflow"
        )
        policy = entry.model_version_policy
        if model.policy.kind == "all":
            policy.all.SetInParent()
        elif model.policy.kind == "specific":
            policy.specific.versions.extend(model.policy.versions)
        else:
            policy.latest.num_versions = model.policy.num_versions
        for label, version in model.labels.items():
            entry.version_labels[label] = version
    return config


@dataclass(frozen=True)
class TlsConfig:
    """TLS for the gRPC API, as TF Serving's ``--ssl_config_file`` (an ``SSLConfig``) holds it.

    PEM texts, not paths; ``client_verify`` asks clients for a certificate signed by
    ``custom_ca`` (mutual TLS).

    Example:
        >>> TlsConfig(server_key="-----BEGIN PRIVATE KEY-----...", server_cert="...").client_verify
        False
    """

    server_key: str
    server_cert: str
    custom_ca: str = ""
    client_verify: bool = False


def _ssl_config_class() -> Any:
    # tensorflow-serving-api does not ship ssl_config_pb2; build the same message (fields 1-4 of
    # tensorflow.serving.SSLConfig) so the file is read with protobuf's own text format rules.
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(
        name="tfship_ssl_config.proto", package="tfship.serving", syntax="proto3"
    )
    message = proto.message_type.add(name="SSLConfig")
    string, boolean = descriptor_pb2.FieldDescriptorProto.TYPE_STRING, 8
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    for number, (field_name, kind) in enumerate(
        [("server_key", string), ("server_cert", string), ("custom_ca", string),
         ("client_verify", boolean)], start=1
    ):
        message.field.add(name=field_name, number=number, type=kind, label=optional)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tfship.serving.SSLConfig"))


def read_ssl_config(path: str | os.PathLike[str]) -> TlsConfig:
    """Read an ``SSLConfig`` text proto (server_key, server_cert, custom_ca, client_verify)."""
    from google.protobuf import text_format

    message = _ssl_config_class()()
    try:
        text_format.Parse(_read_text(Path(path)), message)
    except text_format.ParseError as exc:
        raise ServerConfigError(f"{path}: not an SSLConfig text proto: {exc}") from exc
    if not message.server_key or not message.server_cert:
        raise ServerConfigError(f"{path}: an SSLConfig needs server_key and server_cert (PEM)")
    if message.client_verify and not message.custom_ca:
        raise ServerConfigError(f"{path}: client_verify needs custom_ca to check clients against")
    return TlsConfig(message.server_key, message.server_cert, message.custom_ca,
                     message.client_verify)
