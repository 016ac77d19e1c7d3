"""``ServingClient``: a typed, fast TensorFlow Serving gRPC client that is hard to misuse.

The request builders and result types here are shared by the asyncio client (``_aio.py``) and
the REST transport (``_rest.py``); only the way bytes travel differs.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tfship.serve_client._codec import decode_predict_response, encode_tensor, protos
from tfship.serve_client._errors import (
    DeadlineExceededError,
    InvalidInputError,
    ModelLoadFailedError,
    ModelNotFoundError,
    ServingCallError,
    ServingSignatureNotFoundError,
    UnavailableError,
    UnimplementedError,
    error_from_status,
    rpc_errors,
)

if TYPE_CHECKING:
    from tfship.serve_client._batching import BatchingConfig, MicroBatcher

__all__ = [
    "DEFAULT",
    "ClassifyResult",
    "ModelMetadata",
    "ModelSpec",
    "MultiInferenceResult",
    "PredictResult",
    "RegressResult",
    "RetryPolicy",
    "ServingClient",
    "TLSConfig",
    "VersionStatus",
]

logger = logging.getLogger(__name__)

DEFAULT_SIGNATURE = "serving_default"
PREDICTION_SERVICE = "/tensorflow.serving.PredictionService/"
MODEL_SERVICE = "/tensorflow.serving.ModelService/"
_NEVER_RETRY = frozenset({"INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"})
_STATE_NAMES = {0: "UNKNOWN", 10: "START", 20: "LOADING", 30: "AVAILABLE", 40: "UNLOADING", 50: "END"}
_METADATA_TTL = 60.0


class _Default:
    """Sentinel type of :data:`DEFAULT`: "use the client's timeout"."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()
"""Per-call ``timeout=DEFAULT`` means the client's timeout; ``None`` means no deadline."""

T = TypeVar("T")


# ------------------------------------------------------------------------------- options


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


DEFAULT_RETRIES = RetryPolicy()
"""The default: 5 attempts, 50 ms doubling up to 2 s, half jitter, on UNAVAILABLE only."""


@dataclass(frozen=True)
class TLSConfig:
    """TLS (or mutual TLS with ``client_cert`` + ``client_key``) for the channel.

    Each certificate is PEM bytes or a path to a PEM file; ``ca_cert=None`` trusts the system
    roots. ``server_name`` overrides the name checked against the server's certificate.

    Example:
        >>> TLSConfig(ca_cert=b"-----BEGIN CERTIFICATE-----...").server_name is None
        True
    """

    ca_cert: bytes | str | Path | None = None
    client_cert: bytes | str | Path | None = None
    client_key: bytes | str | Path | None = None
    server_name: str | None = None

    def credentials(self) -> Any:
        """The ``grpc.ChannelCredentials`` for this configuration."""
        import grpc

        if (self.client_cert is None) != (self.client_key is None):
            raise ValueError("mutual TLS needs both client_cert and client_key")
        return grpc.ssl_channel_credentials(
            root_certificates=_pem(self.ca_cert),
            private_key=_pem(self.client_key),
            certificate_chain=_pem(self.client_cert),
        )


def _pem(value: bytes | str | Path | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return Path(value).read_bytes()


# ------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ModelSpec:
    """Which servable answered: model name, version (None if not reported) and signature.

    Example:
        >>> ModelSpec("iris", 3, "serving_default").version
        3
    """

    name: str
    version: int | None
    signature_name: str = ""

    @classmethod
    def from_proto(cls, proto: Any) -> ModelSpec:
        version = proto.version.value if proto.HasField("version") else None
        return cls(proto.name, version, proto.signature_name)


class PredictResult:
    """The answer of ``predict``: outputs as numpy arrays, which servable answered, the proto.

    Example:
        >>> result = client.predict("iris", {"x": [[1.0, 2.0]]})  # doctest: +SKIP
        >>> result.as_numpy("scores").shape  # doctest: +SKIP
        (1, 3)
    """

    def __init__(
        self, outputs: dict[str, np.ndarray[Any, Any]], model_spec: ModelSpec, raw: Callable[[], Any]
    ) -> None:
        self.outputs = outputs
        self.model_spec = model_spec
        self._raw = raw

    @property
    def raw(self) -> Any:
        """The response as received (``PredictResponse``, or the JSON body over REST)."""
        return self._raw()

    def as_numpy(self, name: str) -> np.ndarray[Any, Any]:
        """Return one output; an unknown name raises ``KeyError`` listing the output names."""
        try:
            return self.outputs[name]
        except KeyError:
            raise KeyError(
                f"no output named {name!r}; outputs are: {', '.join(sorted(self.outputs))}"
            ) from None

    def __repr__(self) -> str:
        shapes = {k: v.shape for k, v in self.outputs.items()}
        return f"PredictResult(model_spec={self.model_spec}, outputs={shapes})"


@dataclass
class ClassifyResult:
    """The answer of ``classify``: per example, (label, score) pairs in the server's order.

    ``labels`` and ``scores`` are arrays of shape ``[examples, classes]``.

    Example:
        >>> result.classes[0][:1]  # doctest: +SKIP
        [('Adelie', 0.93)]
    """

    classes: list[list[tuple[str, float]]]
    model_spec: ModelSpec
    raw: Any = field(repr=False)

    @property
    def labels(self) -> np.ndarray[Any, Any]:
        """Labels as an object array ``[examples, classes]`` of str."""
        out = np.empty((len(self.classes), _width(self.classes)), dtype=object)
        for i, row in enumerate(self.classes):
            out[i, : len(row)] = [label for label, _ in row]
        return out

    @property
    def scores(self) -> np.ndarray[Any, Any]:
        """Scores as float32 ``[examples, classes]``."""
        out = np.zeros((len(self.classes), _width(self.classes)), dtype=np.float32)
        for i, row in enumerate(self.classes):
            out[i, : len(row)] = [score for _, score in row]
        return out

    def as_numpy(self, name: str) -> np.ndarray[Any, Any]:
        """``"scores"`` or ``"classes"`` (the labels) as an array; other names raise KeyError."""
        table = {"classes": lambda: self.labels, "scores": lambda: self.scores}
        if name not in table:
            raise KeyError(f"no output named {name!r}; outputs are: classes, scores")
        return table[name]()


def _width(rows: list[list[Any]]) -> int:
    return max((len(row) for row in rows), default=0)


@dataclass
class RegressResult:
    """The answer of ``regress``: one float per example.

    Example:
        >>> client.regress("m", [{"x": 1.0}]).values  # doctest: +SKIP
        array([0.5], dtype=float32)
    """

    values: np.ndarray[Any, Any]
    model_spec: ModelSpec
    raw: Any = field(repr=False)

    def as_numpy(self, name: str = "outputs") -> np.ndarray[Any, Any]:
        """``"outputs"`` (the values); other names raise KeyError."""
        if name != "outputs":
            raise KeyError(f"no output named {name!r}; outputs are: outputs")
        return self.values


@dataclass
class MultiInferenceResult:
    """The answers of ``multi_inference``, one per task in the order asked."""

    results: list[ClassifyResult | RegressResult]
    raw: Any = field(repr=False)


@dataclass(frozen=True)
class VersionStatus:
    """The state of one version of a model as the server reports it.

    Example:
        >>> VersionStatus(3, "AVAILABLE", "OK", "").available
        True
    """

    version: int
    state: str
    error_code: str
    error_message: str

    @property
    def available(self) -> bool:
        return self.state == "AVAILABLE"


@dataclass
class ModelMetadata:
    """A served model's signatures (``tfship.inspect.SignatureInfo``), and who answered.

    Example:
        >>> meta = client.metadata("iris")  # doctest: +SKIP
        >>> meta.signatures["serving_default"].inputs["x"].dtype  # doctest: +SKIP
        'float32'
    """

    model_spec: ModelSpec
    signatures: dict[str, Any]
    raw: Any = field(repr=False)

    def signature(self, key: str | None = None) -> Any:
        """One signature (``None`` = serving_default); an unknown key lists the keys."""
        key = key or DEFAULT_SIGNATURE
        if key not in self.signatures:
            raise ServingSignatureNotFoundError(
                f"model {self.model_spec.name!r} has no signature {key!r}; "
                f"signatures are: {', '.join(_public_keys(self.signatures)) or '(none)'}",
                model=self.model_spec.name,
                version=self.model_spec.version,
            )
        return self.signatures[key]


def _public_keys(signatures: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in signatures if not k.startswith("__"))


# ------------------------------------------------------------------ request building (shared)


def model_spec_proto(
    model: str,
    *,
    version: int | None = None,
    label: str | None = None,
    signature: str | None = None,
) -> Any:
    """Build a ``ModelSpec``; ``version=None`` leaves the version unset (never sends 0).

    Raises:
        ValueError: both version and label, an empty model name or a negative version.
    """
    if not model:
        raise ValueError("model name must be a non-empty string")
    if version is not None and label is not None:
        raise ValueError("give version or label, not both")
    spec = protos().model_pb2.ModelSpec(name=model)
    if version is not None:
        if isinstance(version, bool) or int(version) < 0:
            raise ValueError(f"version must be a non-negative int, got {version!r}")
        spec.version.value = int(version)
    elif label is not None:
        spec.version_label = label
    if signature:
        spec.signature_name = signature
    return spec


def to_example(record: Any, schema: Any = None, where: str = "") -> Any:
    """A ``tf.train.Example`` from a record dict (str/bytes -> bytes, int/bool -> int64,
    float -> float), an Example (returned as is) or its serialized bytes.

    Example:
        >>> ex = to_example({"age": 3, "name": "x", "w": [0.5, 1.5]})
        >>> ex.features.feature["w"].float_list.value[:]
        [0.5, 1.5]
    """
    example_cls = protos().example_pb2.Example
    if isinstance(record, example_cls):
        return record
    if isinstance(record, (bytes, bytearray)):
        return example_cls.FromString(bytes(record))
    if hasattr(record, "SerializeToString"):  # an Example from another protobuf copy
        return example_cls.FromString(record.SerializeToString())
    if not isinstance(record, Mapping):
        raise TypeError(f"an example must be a dict or tf.train.Example, got {type(record).__name__}")
    if schema is not None:
        return example_cls.FromString(schema.to_example(record, where=where).SerializeToString())
    example = example_cls()
    for name, value in record.items():
        _fill_feature(example.features.feature, str(name), value)
    return example


def _fill_feature(features: Any, name: str, value: Any) -> None:
    values = _feature_values(value)
    if not values:  # no values: leave the feature out (a var-length feature reads it as empty)
        return
    first = values[0]
    if isinstance(first, (str, bytes, bytearray, np.str_, np.bytes_)):
        features[name].bytes_list.value.extend(
            [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
        )
    elif isinstance(first, (bool, int, np.integer, np.bool_)):
        features[name].int64_list.value.extend([int(v) for v in values])
    elif isinstance(first, (float, np.floating)):
        features[name].float_list.value.extend([float(v) for v in values])
    else:
        raise TypeError(
            f"feature {name!r}: value {first!r} of type {type(first).__name__} is not "
            "str, bytes, int, bool or float"
        )


def _feature_values(value: Any) -> list[Any]:
    if isinstance(value, np.ndarray):
        return list(value.ravel().tolist())
    if isinstance(value, (list, tuple)):
        return list(value)
    if value is None:
        return []
    return [value]


def examples_input(examples: Iterable[Any], context: Any = None, schema: Any = None) -> Any:
    """The ``tensorflow.serving.Input`` for classify/regress/multi_inference."""
    pb = protos()
    built = [to_example(record, schema, f"example {i}") for i, record in enumerate(examples)]
    if not built:
        raise ValueError("give at least one example")
    message = pb.input_pb2.Input()
    if context is None:
        message.example_list.examples.extend(built)
    else:
        target = message.example_list_with_context
        target.examples.extend(built)
        target.context.CopyFrom(to_example(context, schema, "context"))
    return message


def signature_infos(signature_def_map: Mapping[str, Any]) -> dict[str, Any]:
    """Signatures of a ``SignatureDefMap`` as ``tfship.inspect.SignatureInfo`` objects."""
    from tensorflow.core.protobuf import meta_graph_pb2

    from tfship.inspect import MetaGraphInfo

    meta_graph = meta_graph_pb2.MetaGraphDef()
    for key, sig in signature_def_map.items():
        meta_graph.signature_def[key].CopyFrom(sig)
    signatures: dict[str, Any] = MetaGraphInfo(meta_graph).signatures
    return signatures


def encode_inputs(
    inputs: Any, signature: Any | None, model: str, signature_key: str, *, cast: bool = False
) -> dict[str, Any]:
    """Encode predict inputs to TensorProtos, validated against the signature when known.

    Python values take the signature's dtype; numpy arrays must already have it (or, with
    ``cast``, be castable to it within the same kind, e.g. float64 -> float32), so nothing is
    cast silently. Names, dtypes and ranks are checked before anything is sent.
    """
    if _is_dataframe(inputs):
        # One input per column; lists (not float64 arrays) so each takes the signature's dtype.
        inputs = {str(column): inputs[column].tolist() for column in inputs.columns}
    if not isinstance(inputs, Mapping):
        if signature is None or len(signature.inputs) != 1:
            expected = "" if signature is None else f" (inputs: {_describe(signature.inputs)})"
            raise TypeError(
                f"inputs must be a dict of input name -> values{expected}; a bare array "
                "is accepted only for a signature with exactly one input"
            )
        inputs = {next(iter(signature.inputs)): inputs}
    if signature is None:
        return {str(k): encode_tensor(v) for k, v in inputs.items()}
    _check_names(inputs, signature, model, signature_key)
    encoded = {}
    for key, value in inputs.items():
        info = signature.inputs[key]
        encoded[key] = _encode_checked(key, value, info, model, signature_key, cast)
    return encoded


def _is_dataframe(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


def check_output_filter(
    output_filter: Sequence[str] | None, signature: Any | None, model: str, key: str
) -> None:
    """Unknown output names fail before sending, listing the signature's outputs."""
    if output_filter is None or signature is None:
        return
    if isinstance(output_filter, str):
        raise TypeError("output_filter must be a list of output names, not a str")
    unknown = sorted(set(output_filter) - set(signature.outputs))
    if unknown:
        raise InvalidInputError(
            f"model {model!r} signature {key!r}: no outputs {unknown}; "
            f"outputs are: {', '.join(signature.outputs)}",
            model=model,
        )


def _describe(table: Mapping[str, Any]) -> str:
    parts = []
    for key, info in table.items():
        shape = "?" if info.shape is None else [(-1 if d is None else d) for d in info.shape]
        parts.append(f"{key}: {info.dtype}{shape}")
    return ", ".join(parts)


def _check_names(inputs: Mapping[str, Any], signature: Any, model: str, key: str) -> None:
    unknown = sorted(set(inputs) - set(signature.inputs))
    defaults = set(getattr(signature.proto, "defaults", {}) or {})
    missing = sorted(set(signature.inputs) - set(inputs) - defaults)
    if unknown or missing:
        problems = []
        if unknown:
            problems.append(f"unknown {unknown}")
        if missing:
            problems.append(f"missing {missing}")
        raise InvalidInputError(
            f"model {model!r} signature {key!r}: inputs {', '.join(problems)}; "
            f"the signature expects {_describe(signature.inputs)}",
            model=model,
        )


def _encode_checked(key: str, value: Any, info: Any, model: str, signature: str, cast: bool) -> Any:
    where = f"model {model!r} signature {signature!r} input {key!r}"
    expected = info.dtype
    if isinstance(value, np.ndarray):
        got = "string" if value.dtype.kind in "OUS" else value.dtype.name
        if expected in ("invalid", got):
            proto = encode_tensor(value)
        elif cast and got != "string" and _castable(value.dtype, expected):
            proto = encode_tensor(value, dtype=expected)
        else:
            raise InvalidInputError(
                f"{where}: dtype {got} does not match the signature's {expected}; convert it "
                f"first (array.astype({expected!r})) or create the client with cast=True",
                model=model,
            )
    else:
        try:
            proto = encode_tensor(value, dtype=None if expected == "invalid" else expected)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{where}: {exc}; expected {expected}", model=model) from None
    _check_shape(where, [d.size for d in proto.tensor_shape.dim], info, model)
    return proto


def _castable(got: np.dtype[Any], expected: str) -> bool:
    try:
        target = np.dtype(expected)
    except TypeError:
        return False
    return bool(np.can_cast(got, target, casting="same_kind"))


def _check_shape(where: str, shape: list[int], info: Any, model: str) -> None:
    if info.shape is None:
        return
    rank_ok = len(shape) == len(info.shape)
    dims_ok = rank_ok and all(e is None or e < 0 or e == g for e, g in zip(info.shape, shape))
    if not dims_ok:
        want = [(-1 if d is None else d) for d in info.shape]
        raise InvalidInputError(
            f"{where}: shape {shape} does not fit the signature's {want} (-1 = any size)",
            model=model,
        )


def predict_request(
    model: str,
    encoded: Mapping[str, Any],
    *,
    signature: str | None,
    version: int | None,
    label: str | None,
    output_filter: Sequence[str] | None,
) -> Any:
    request = protos().predict_pb2.PredictRequest()
    request.model_spec.CopyFrom(model_spec_proto(model, version=version, label=label, signature=signature))
    for key, tensor in encoded.items():
        request.inputs[key].CopyFrom(tensor)
    if output_filter is not None:
        if isinstance(output_filter, str):
            raise TypeError("output_filter must be a list of output names, not a str")
        request.output_filter.extend(output_filter)
    return request


def classify_result(result: Any, model_spec: Any, raw: Any) -> ClassifyResult:
    classes = [[(c.label, float(c.score)) for c in item.classes] for item in result.classifications]
    return ClassifyResult(classes, ModelSpec.from_proto(model_spec), raw)


def regress_result(result: Any, model_spec: Any, raw: Any) -> RegressResult:
    values = np.array([r.value for r in result.regressions], dtype=np.float32)
    return RegressResult(values, ModelSpec.from_proto(model_spec), raw)


def status_list(response: Any) -> list[VersionStatus]:
    return [
        VersionStatus(
            version=s.version,
            state=_STATE_NAMES.get(s.state, str(s.state)),
            error_code=_error_code_name(s.status.error_code),
            error_message=s.status.error_message,
        )
        for s in response.model_version_status
    ]


def _error_code_name(code: int) -> str:
    import grpc

    for member in grpc.StatusCode:
        if member.value[0] == code:
            return str(member.name)
    return str(code)


def metadata_result(response: Any) -> ModelMetadata:
    pb = protos()
    sig_map = pb.get_model_metadata_pb2.SignatureDefMap()
    if "signature_def" in response.metadata:
        response.metadata["signature_def"].Unpack(sig_map)
    signatures = signature_infos(sig_map.signature_def)
    return ModelMetadata(ModelSpec.from_proto(response.model_spec), signatures, response)


def reload_request(config: Any) -> Any:
    """A ``ReloadConfigRequest`` from a ``ModelServerConfig``/``ModelConfigList`` or dicts."""
    pb = protos()
    request = pb.model_management_pb2.ReloadConfigRequest()
    if isinstance(config, pb.model_server_config_pb2.ModelServerConfig):
        request.config.CopyFrom(config)
    elif isinstance(config, pb.model_server_config_pb2.ModelConfigList):
        request.config.model_config_list.CopyFrom(config)
    else:
        from google.protobuf import json_format

        for entry in config:
            model_config = request.config.model_config_list.config.add()
            json_format.ParseDict(dict(entry), model_config)
    return request


def multi_inference_request(
    model: str,
    examples_message: Any,
    tasks: Sequence[tuple[str, str]],
    *,
    version: int | None,
    label: str | None,
) -> Any:
    pb = protos()
    request = pb.inference_pb2.MultiInferenceRequest()
    request.input.CopyFrom(examples_message)
    if not tasks:
        raise ValueError("give at least one (signature, method) task")
    for signature, method in tasks:
        if method not in ("classify", "regress"):
            raise ValueError(f"task method must be 'classify' or 'regress', got {method!r}")
        task = request.tasks.add()
        task.model_spec.CopyFrom(model_spec_proto(model, version=version, label=label, signature=signature))
        task.method_name = f"tensorflow/serving/{method}"
    return request


def multi_inference_result(response: Any) -> MultiInferenceResult:
    results: list[ClassifyResult | RegressResult] = []
    for item in response.results:
        if item.HasField("classification_result"):
            results.append(classify_result(item.classification_result, item.model_spec, item))
        else:
            results.append(regress_result(item.regression_result, item.model_spec, item))
    return MultiInferenceResult(results, response)


# ------------------------------------------------------------------------------- channel


def channel_options(
    max_message_bytes: int, keepalive: float | None, extra: Sequence[tuple[str, Any]]
) -> list[tuple[str, Any]]:
    """gRPC channel options: TF Serving's 2 GiB message limit, keepalive, quick reconnects."""
    options: list[tuple[str, Any]] = [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        # A down server is retried by us with backoff; gRPC's own reconnect backoff (1 s up to
        # 2 min by default) would make every retry fail fast without trying to connect.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    ]
    if keepalive is not None:
        options += [
            ("grpc.keepalive_time_ms", int(keepalive * 1000)),
            ("grpc.keepalive_timeout_ms", 20000),
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.http2.max_pings_without_data", 0),
        ]
    names = {name for name, _ in extra}
    return [opt for opt in options if opt[0] not in names] + list(extra)


def tls_credentials(tls: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """(channel credentials or None, extra options) for ``tls=`` (bool, TLSConfig, credentials)."""
    import grpc

    if tls is None or tls is False:
        return None, []
    if tls is True:
        return grpc.ssl_channel_credentials(), []
    if isinstance(tls, TLSConfig):
        extra = []
        if tls.server_name:
            extra.append(("grpc.ssl_target_name_override", tls.server_name))
        return tls.credentials(), extra
    if isinstance(tls, grpc.ChannelCredentials):
        return tls, []
    raise TypeError(f"tls must be a bool, TLSConfig or grpc.ChannelCredentials, got {tls!r}")


def resolve_retries(retries: int | RetryPolicy | None) -> RetryPolicy:
    if retries is None:
        return RetryPolicy(attempts=1)
    if isinstance(retries, RetryPolicy):
        return retries
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be a RetryPolicy or an int >= 0, got {retries!r}")
    return RetryPolicy(attempts=retries + 1)


def _identity(data: bytes) -> bytes:
    return data


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


# Method -> (service path, response class attribute path or None for raw bytes)
_RESPONSES: dict[str, tuple[str, str | None]] = {
    "Predict": (PREDICTION_SERVICE, None),
    "Classify": (PREDICTION_SERVICE, "classification_pb2.ClassificationResponse"),
    "Regress": (PREDICTION_SERVICE, "regression_pb2.RegressionResponse"),
    "MultiInference": (PREDICTION_SERVICE, "inference_pb2.MultiInferenceResponse"),
    "GetModelMetadata": (PREDICTION_SERVICE, "get_model_metadata_pb2.GetModelMetadataResponse"),
    "GetModelStatus": (MODEL_SERVICE, "get_model_status_pb2.GetModelStatusResponse"),
    "HandleReloadConfigRequest": (MODEL_SERVICE, "model_management_pb2.ReloadConfigResponse"),
}


def response_parser(method: str) -> Callable[[bytes], Any]:
    _, cls_path = _RESPONSES[method]
    if cls_path is None:
        return _identity
    module, cls = cls_path.split(".")
    parser: Callable[[bytes], Any] = getattr(getattr(protos(), module), cls).FromString
    return parser


# -------------------------------------------------------------------------------- client


class _MetadataCache:
    """Signatures per (model, version, label), fetched once and kept ``_METADATA_TTL`` seconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, int | None, str | None], tuple[float, dict[str, Any]]] = {}

    def get(self, key: tuple[str, int | None, str | None]) -> dict[str, Any] | None:
        with self._lock:
            item = self._items.get(key)
        if item is None or time.monotonic() - item[0] > _METADATA_TTL:
            return None
        return item[1]

    def put(self, key: tuple[str, int | None, str | None], value: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = (time.monotonic(), value)

    def drop(self, model: str) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == model]:
                del self._items[key]


def pick_signature(signatures: Mapping[str, Any] | None, key: str | None, model: str) -> Any | None:
    """The signature to validate against, or None when metadata is unknown."""
    if signatures is None:
        return None
    key = key or DEFAULT_SIGNATURE
    if key not in signatures:
        raise ServingSignatureNotFoundError(
            f"model {model!r} has no signature {key!r}; signatures are: "
            f"{', '.join(_public_keys(signatures)) or '(none)'}",
            model=model,
        )
    return signatures[key]


class ServingClient:
    """A TensorFlow Serving gRPC client: typed results, deadlines, retries, validation.

    Args:
        target: ``host:port``, ``unix:/path/to.sock`` or any gRPC target.
        timeout: default deadline of each call in seconds (``None``: no deadline).
        retries: a :class:`RetryPolicy`, or the number of retries on ``UNAVAILABLE``.
        tls: ``True`` (system roots), a :class:`TLSConfig` or ``grpc.ChannelCredentials``.
        max_message_bytes: send and receive limit; TF Serving allows 2 GiB - 1.
        options: extra gRPC channel options; they override the defaults.
        headers: metadata sent with every call (e.g. an authorization token).
        keepalive: seconds between keepalive pings during calls (``None``: gRPC's default).
        validate: check inputs against the signature (fetched once per model) before sending.
        cast: let numpy inputs be cast to the signature's dtype within the same kind
            (float64 -> float32, int64 -> int32); off by default, as TF Serving refuses them.
        batching: a :class:`~tfship.serve_client.BatchingConfig` to merge concurrent predicts.

    Example:
        >>> with ServingClient("127.0.0.1:8500") as client:  # doctest: +SKIP
        ...     result = client.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]})
        ...     result.as_numpy("scores"), result.model_spec.version
    """

    def __init__(
        self,
        target: str,
        *,
        timeout: float | None = 30.0,
        retries: int | RetryPolicy | None = DEFAULT_RETRIES,
        tls: Any = None,
        max_message_bytes: int = 2**31 - 1,
        options: Sequence[tuple[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
        keepalive: float | None = 60.0,
        validate: bool = True,
        cast: bool = False,
        batching: BatchingConfig | None = None,
    ) -> None:
        import grpc

        self.target = target
        self.timeout = timeout
        self.retry_policy = resolve_retries(retries)
        self.validate = validate
        self.cast = cast
        self.headers = tuple((k.lower(), v) for k, v in (headers or {}).items())
        creds, tls_options = tls_credentials(tls)
        all_options = channel_options(max_message_bytes, keepalive, [*tls_options, *options])
        if creds is None:
            self._channel = grpc.insecure_channel(target, options=all_options)
        else:
            self._channel = grpc.secure_channel(target, creds, options=all_options)
        self._calls: dict[str, Any] = {}
        self._metadata = _MetadataCache()
        self._rng = random.Random()
        self._closed = False
        self._pid = os.getpid()
        self._batcher: MicroBatcher | None = None
        if batching is not None:
            from tfship.serve_client._batching import MicroBatcher

            self._batcher = MicroBatcher(self._predict_now, batching)

    # -- lifecycle
    def __enter__(self) -> ServingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._batcher is not None:
            self._batcher.close()
        self._channel.close()

    def __repr__(self) -> str:
        return f"ServingClient({self.target!r}, timeout={self.timeout})"

    # -- the one place RPCs are sent
    def _call(
        self,
        method: str,
        request: Any,
        *,
        model: str | None,
        version: int | str | None,
        timeout: Any,
    ) -> Any:
        if self._closed:
            raise RuntimeError("this ServingClient is closed")
        if os.getpid() != self._pid:
            # A gRPC channel does not survive fork(): calls from the child hang or fail oddly.
            raise RuntimeError(
                f"this ServingClient was created in process {self._pid}; gRPC channels do not "
                "survive fork(): create a new ServingClient in each worker process"
            )
        stub = self._calls.get(method)
        if stub is None:
            service, _ = _RESPONSES[method]
            stub = self._channel.unary_unary(
                service + method,
                request_serializer=_serialize,
                response_deserializer=response_parser(method),
            )
            self._calls[method] = stub
        budget = self.timeout if timeout is DEFAULT else timeout
        deadline = None if budget is None else time.monotonic() + budget
        return run_with_retries(
            lambda remaining: stub(request, timeout=remaining, metadata=self.headers or None),
            policy=self.retry_policy,
            deadline=deadline,
            rng=self._rng,
            sleep=time.sleep,
            context={"model": model, "version": version, "method": method},
        )

    # -- metadata used for validation
    def _signatures(self, model: str, version: int | None, label: str | None) -> dict[str, Any] | None:
        if not self.validate:
            return None
        key = (model, version, label)
        cached = self._metadata.get(key)
        if cached is not None:
            return cached
        try:
            meta = self.metadata(model, version=version, label=label)
        except UnimplementedError:
            return None  # a server without metadata: validation is best effort
        self._metadata.put(key, meta.signatures)
        return meta.signatures

    # -- RPCs
    def predict(
        self,
        model: str,
        inputs: Any,
        *,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        output_filter: Sequence[str] | None = None,
        timeout: Any = DEFAULT,
    ) -> PredictResult:
        """Run a signature on inputs and return its outputs as numpy arrays.

        Args:
            model: the model name.
            inputs: input name -> array / list / scalar; a bare array for a one-input signature.
            signature: signature key (default ``serving_default``).
            version: a version number; ``None`` asks for the latest loaded version.
            label: a version label (``stable``); not with ``version``.
            output_filter: output names to compute and return (default: all).
            timeout: seconds for this call; ``DEFAULT`` = the client's, ``None`` = no deadline.

        Returns:
            A :class:`PredictResult`.

        Raises:
            InvalidInputError: names, dtypes or ranks do not fit the signature (checked before
                sending when ``validate``), or the server rejects the inputs.
            ModelNotFoundError, VersionNotFoundError, ServingSignatureNotFoundError,
            DeadlineExceededError, UnavailableError: as the server answers.

        Example:
            >>> client.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]}).outputs  # doctest: +SKIP
        """
        if self._batcher is not None:
            batched: PredictResult = self._batcher.submit(
                model,
                inputs,
                signature=signature,
                version=version,
                label=label,
                output_filter=output_filter,
                timeout=timeout,
            )
            return batched
        return self._predict_now(
            model,
            inputs,
            signature=signature,
            version=version,
            label=label,
            output_filter=output_filter,
            timeout=timeout,
        )

    def _predict_now(
        self,
        model: str,
        inputs: Any,
        *,
        signature: str | None,
        version: int | None,
        label: str | None,
        output_filter: Sequence[str] | None,
        timeout: Any,
    ) -> PredictResult:
        sig = pick_signature(self._signatures(model, version, label), signature, model)
        encoded = encode_inputs(inputs, sig, model, signature or DEFAULT_SIGNATURE, cast=self.cast)
        check_output_filter(output_filter, sig, model, signature or DEFAULT_SIGNATURE)
        request = predict_request(
            model,
            encoded,
            signature=signature,
            version=version,
            label=label,
            output_filter=output_filter,
        )
        try:
            data = self._call("Predict", request, model=model, version=version or label, timeout=timeout)
        except (InvalidInputError, ModelNotFoundError, ServingSignatureNotFoundError):
            # The served signature may have changed under us (a new version): fetch it again.
            self._metadata.drop(model)
            raise
        return predict_result(data)

    def classify(
        self,
        model: str,
        examples: Iterable[Any],
        *,
        context: Any = None,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        schema: Any = None,
        timeout: Any = DEFAULT,
    ) -> ClassifyResult:
        """Classify records (dicts or ``tf.train.Example``) with a classification signature.

        ``context`` is a record merged into every example (the example's features win);
        ``schema`` (a ``tfship.schema.Schema``) converts dict records with its dtypes and defaults.

        Example:
            >>> client.classify("penguins", [{"island": "Dream"}]).classes[0]  # doctest: +SKIP
        """
        pb = protos()
        request = pb.classification_pb2.ClassificationRequest()
        request.model_spec.CopyFrom(
            model_spec_proto(model, version=version, label=label, signature=signature)
        )
        request.input.CopyFrom(examples_input(examples, context, schema))
        response = self._call("Classify", request, model=model, version=version or label, timeout=timeout)
        return classify_result(response.result, response.model_spec, response)

    def regress(
        self,
        model: str,
        examples: Iterable[Any],
        *,
        context: Any = None,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        schema: Any = None,
        timeout: Any = DEFAULT,
    ) -> RegressResult:
        """Regress records (dicts or ``tf.train.Example``) with a regression signature.

        Example:
            >>> client.regress("prices", [{"rooms": 3}]).values  # doctest: +SKIP
        """
        pb = protos()
        request = pb.regression_pb2.RegressionRequest()
        request.model_spec.CopyFrom(
            model_spec_proto(model, version=version, label=label, signature=signature)
        )
        request.input.CopyFrom(examples_input(examples, context, schema))
        response = self._call("Regress", request, model=model, version=version or label, timeout=timeout)
        return regress_result(response.result, response.model_spec, response)

    def multi_inference(
        self,
        model: str,
        examples: Iterable[Any],
        tasks: Sequence[tuple[str, str]],
        *,
        context: Any = None,
        version: int | None = None,
        label: str | None = None,
        schema: Any = None,
        timeout: Any = DEFAULT,
    ) -> MultiInferenceResult:
        """Run several classify/regress signatures on the same examples in one call.

        Args:
            tasks: (signature key, ``"classify"`` | ``"regress"``) pairs, answered in order.

        Example:
            >>> client.multi_inference("m", rows, [("classification", "classify")])  # doctest: +SKIP
        """
        request = multi_inference_request(
            model, examples_input(examples, context, schema), tasks, version=version, label=label
        )
        response = self._call(
            "MultiInference", request, model=model, version=version or label, timeout=timeout
        )
        return multi_inference_result(response)

    def metadata(
        self,
        model: str,
        *,
        version: int | None = None,
        label: str | None = None,
        timeout: Any = DEFAULT,
    ) -> ModelMetadata:
        """The served model's signatures, as ``tfship.inspect.SignatureInfo`` objects.

        Example:
            >>> sorted(client.metadata("iris").signatures)  # doctest: +SKIP
            ['__saved_model_init_op', 'serving_default']
        """
        pb = protos()
        request = pb.get_model_metadata_pb2.GetModelMetadataRequest()
        request.model_spec.CopyFrom(model_spec_proto(model, version=version, label=label))
        request.metadata_field.append("signature_def")
        response = self._call(
            "GetModelMetadata", request, model=model, version=version or label, timeout=timeout
        )
        return metadata_result(response)

    def status(
        self, model: str, *, version: int | None = None, timeout: Any = DEFAULT
    ) -> list[VersionStatus]:
        """The state of each version of the model the server tracks, newest first.

        Example:
            >>> client.status("iris")  # doctest: +SKIP
            [VersionStatus(version=2, state='AVAILABLE', error_code='OK', error_message='')]
        """
        pb = protos()
        request = pb.get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.CopyFrom(model_spec_proto(model, version=version))
        response = self._call("GetModelStatus", request, model=model, version=version, timeout=timeout)
        return status_list(response)

    def wait_until_available(
        self,
        model: str,
        version: int | None = None,
        *,
        timeout: float = 60.0,
        poll: float = 0.1,
    ) -> VersionStatus:
        """Block until the model (or that version) is AVAILABLE; return its status.

        Raises:
            DeadlineExceededError: not available within ``timeout``; says the last state seen.
            ModelLoadFailedError: the version ended (END) with a load error.

        Example:
            >>> client.wait_until_available("iris", timeout=30).version  # doctest: +SKIP
            2
        """
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            try:
                found = self.status(
                    model, version=version, timeout=max(0.05, min(5.0, deadline - time.monotonic()))
                )
                ready = check_ready(found, model, version)
                if ready is not None:
                    return ready
                last = ", ".join(f"{s.version}: {s.state}" for s in found)
            except (UnavailableError, ModelNotFoundError, DeadlineExceededError) as exc:
                last = exc.details or str(exc)
            if time.monotonic() + poll >= deadline:
                raise DeadlineExceededError(
                    f"model {model!r}{'' if version is None else f' version {version}'} not "
                    f"available after {timeout:g} s; last seen: {last}",
                    code="DEADLINE_EXCEEDED",
                    model=model,
                    version=version,
                )
            time.sleep(poll)

    def reload_config(self, config: Any, *, timeout: Any = DEFAULT) -> None:
        """Replace the server's model list (``HandleReloadConfigRequest``).

        Args:
            config: a ``ModelServerConfig``/``ModelConfigList`` or a list of dicts in
                ``ModelConfig`` JSON form (``{"name": ..., "base_path": ...,
                "model_platform": "tensorflow"}``); models left out are unloaded.

        Example:
            >>> client.reload_config([{"name": "iris", "base_path": "/models/iris",
            ...                        "model_platform": "tensorflow"}])  # doctest: +SKIP
        """
        response = self._call(
            "HandleReloadConfigRequest",
            reload_request(config),
            model=None,
            version=None,
            timeout=timeout,
        )
        check_reload(response)
        self._metadata = _MetadataCache()


def predict_result(data: bytes) -> PredictResult:
    decoded = decode_predict_response(data)
    return PredictResult(decoded.outputs, ModelSpec.from_proto(decoded.model_spec), lambda: decoded.raw)


def check_ready(found: list[VersionStatus], model: str, version: int | None) -> VersionStatus | None:
    """The available version among ``found`` (the newest), or None; raises on a failed load."""
    available = [s for s in found if s.available]
    if available:
        return max(available, key=lambda s: s.version)
    failed = [s for s in found if s.state == "END" and s.error_code != "OK"]
    if version is not None and failed:
        raise ModelLoadFailedError(
            f"model {model!r} version {version} failed to load: {failed[0].error_message}",
            code=failed[0].error_code,
            details=failed[0].error_message,
            model=model,
            version=version,
        )
    return None


def check_reload(response: Any) -> None:
    code = response.status.error_code
    if code:
        raise error_from_status(_error_code_name(code), response.status.error_message, method="ReloadConfig")


def run_with_retries(
    attempt: Callable[[float | None], T],
    *,
    policy: RetryPolicy,
    deadline: float | None,
    rng: random.Random,
    sleep: Callable[[float], None],
    context: Mapping[str, Any],
) -> T:
    """Call ``attempt(remaining_seconds)`` until it succeeds, a non-retryable error, the
    attempt budget or the deadline; gRPC errors leave as ServingCallError subclasses."""
    number = 0
    while True:
        number += 1
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise _deadline_error(context, number - 1)
        try:
            with rpc_errors(**context):
                return attempt(remaining)
        except ServingCallError as exc:
            delay = _retry_delay(exc, number, policy, deadline, rng)
            if delay is None:
                if number > 1:
                    exc.args = (f"{exc.args[0]} (after {number} attempts)",)
                raise
            logger.debug(
                "%s failed with %s; retry %d in %.3f s", context.get("method"), exc.code, number, delay
            )
            sleep(delay)


def _retry_delay(
    exc: ServingCallError,
    number: int,
    policy: RetryPolicy,
    deadline: float | None,
    rng: random.Random,
) -> float | None:
    if exc.code not in policy.retry_on or number >= policy.attempts:
        return None
    delay = policy.delay(number, rng)
    if deadline is not None and time.monotonic() + delay >= deadline:
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
