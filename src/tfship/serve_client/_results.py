"""Typed results of the clients (outputs as numpy arrays, who answered, the raw answer) and the
pure functions that map TF Serving's response messages to them, whatever the transport.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire import (
    DEFAULT_SIGNATURE,
    ClassificationResult,
    GetModelMetadataResponse,
    GetModelStatusResponse,
    ModelSpecProto,
    MultiInferenceResponse,
    RegressionResult,
    ReloadConfigResponse,
    TensorDecodeError,
    decode_predict_response,
    protos,
)
from tfship.serve_client._errors import (
    InvalidInputError,
    MalformedResponseError,
    ModelLoadFailedError,
    ServingCallError,
    ServingSignatureNotFoundError,
    error_from_status,
    import_grpc,
)

if TYPE_CHECKING:
    from tfship.inspect import SignatureInfo

_STATE_NAMES = {0: "UNKNOWN", 10: "START", 20: "LOADING", 30: "AVAILABLE", 40: "UNLOADING", 50: "END"}


@dataclass(frozen=True)
class ModelSpec:
    """Which servable answered: model name, version (None if not reported) and signature.

    Over gRPC the version is the one that answered. TF Serving's REST answers name no version:
    over REST it is the version the call asked for (``version=``), and None when the call
    asked for the latest or a label.

    Example:
        >>> ModelSpec("iris", 3, "serving_default").version
        3
    """

    name: str
    version: int | None
    signature_name: str = ""

    @classmethod
    def from_proto(cls, proto: ModelSpecProto) -> ModelSpec:
        version = proto.version.value if proto.HasField("version") else None
        return cls(proto.name, version, proto.signature_name)


class PredictResult:
    """The answer of ``predict``: outputs as numpy arrays, which servable answered, the proto.

    Strings, on every transport: a string tensor is an object array of ``bytes``, as
    TensorFlow holds it (it may be binary); the labels of :class:`ClassifyResult` are ``str``,
    as TF Serving's ``Class.label`` is text.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.server import ModelServer
        >>> from tfship.serve_client import InProcessTransport, ServingClient
        >>> with ModelServer.from_base_path("m", "m") as server:
        ...     client = ServingClient(transport=InProcessTransport(server))
        ...     result = client.predict("m", {"x": [[1.0, 2.0, 3.0]]})
        >>> result.as_numpy("y").shape, result.model_spec.version
        ((1, 3), 1)
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

    ``labels`` and ``scores`` are arrays of shape ``[examples, classes]``. Labels are ``str``
    (TF Serving's ``Class.label`` is text), where a string tensor from ``predict`` is ``bytes``.

    Example:
        >>> result = ClassifyResult([[("Adelie", 0.93), ("Gentoo", 0.07)]], ModelSpec("m", 1), raw=None)
        >>> result.classes[0][:1]
        [('Adelie', 0.93)]
        >>> result.labels, result.scores
        (array([['Adelie', 'Gentoo']], dtype=object), array([[0.93, 0.07]], dtype=float32))
    """

    classes: list[list[tuple[str, float]]]
    model_spec: ModelSpec
    raw: Any = field(repr=False)

    @property
    def labels(self) -> NDArray[np.object_]:
        """Labels as an object array ``[examples, classes]`` of str."""
        out = np.empty((len(self.classes), _width(self.classes)), dtype=object)
        for i, row in enumerate(self.classes):
            out[i, : len(row)] = [label for label, _ in row]
        return out

    @property
    def scores(self) -> NDArray[np.float32]:
        """Scores as float32 ``[examples, classes]``."""
        out = np.zeros((len(self.classes), _width(self.classes)), dtype=np.float32)
        for i, row in enumerate(self.classes):
            out[i, : len(row)] = [score for _, score in row]
        return out

    def as_numpy(self, name: str) -> np.ndarray[Any, Any]:
        """``"scores"`` or ``"classes"`` (the labels) as an array; other names raise KeyError."""
        if name == "classes":
            return self.labels
        if name == "scores":
            return self.scores
        raise KeyError(f"no output named {name!r}; outputs are: classes, scores")


def _width(rows: list[list[tuple[str, float]]]) -> int:
    return max((len(row) for row in rows), default=0)


@dataclass
class RegressResult:
    """The answer of ``regress``: one float per example.

    Example:
        >>> RegressResult(np.array([0.5], dtype=np.float32), ModelSpec("m", 1), raw=None).values
        array([0.5], dtype=float32)
    """

    values: NDArray[np.float32]
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
    """The state of one version of a model as the server reports it, and the labels asked
    about (``status(labels=...)``) that point at it.

    Example:
        >>> VersionStatus(3, "AVAILABLE", "OK", "", ("stable",)).available
        True
    """

    version: int
    state: str
    error_code: str
    error_message: str
    labels: tuple[str, ...] = ()

    @property
    def available(self) -> bool:
        return self.state == "AVAILABLE"


@dataclass
class ModelMetadata:
    """A served model's signatures (``tfship.inspect.SignatureInfo``), and who answered.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.server import ModelServer
        >>> from tfship.serve_client import InProcessTransport, ServingClient
        >>> with ModelServer.from_base_path("m", "m") as server:
        ...     meta = ServingClient(transport=InProcessTransport(server)).metadata("m")
        >>> meta.signatures["serving_default"].inputs["x"].dtype
        'float32'
    """

    model_spec: ModelSpec
    signatures: dict[str, SignatureInfo]
    raw: Any = field(repr=False)

    def signature(self, key: str | None = None) -> SignatureInfo:
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


def _public_keys(signatures: Mapping[str, object]) -> list[str]:
    return sorted(k for k in signatures if not k.startswith("__"))


# ------------------------------------------------------------- answers to results


def signature_infos(signature_def_map: Mapping[str, Any]) -> dict[str, SignatureInfo]:
    """Signatures of a ``SignatureDefMap`` as ``tfship.inspect.SignatureInfo`` objects."""
    from tfship.inspect import MetaGraphInfo

    meta_graph = protos().meta_graph_pb2.MetaGraphDef()
    for key, sig in signature_def_map.items():
        meta_graph.signature_def[key].CopyFrom(sig)
    signatures: dict[str, SignatureInfo] = MetaGraphInfo(meta_graph).signatures
    return signatures


@dataclass
class PredictOutputs:
    """A Predict answer already decoded by its transport (REST): outputs, who answered, the body."""

    outputs: dict[str, np.ndarray[Any, Any]]
    model_spec: ModelSpecProto
    raw: Any = field(repr=False)


def predict_result(answer: bytes | PredictOutputs) -> PredictResult:
    """The result of a Predict answer: a serialized ``PredictResponse`` or decoded outputs."""
    if isinstance(answer, PredictOutputs):
        body = answer.raw
        return PredictResult(answer.outputs, ModelSpec.from_proto(answer.model_spec), lambda: body)
    try:
        decoded = decode_predict_response(answer)
    except TensorDecodeError as exc:
        raise MalformedResponseError(f"the PredictResponse could not be decoded: {exc}") from None
    return PredictResult(decoded.outputs, ModelSpec.from_proto(decoded.model_spec), lambda: decoded.raw)


def classify_result(result: ClassificationResult, model_spec: ModelSpecProto, raw: Any) -> ClassifyResult:
    classes = [[(c.label, float(c.score)) for c in item.classes] for item in result.classifications]
    return ClassifyResult(classes, ModelSpec.from_proto(model_spec), raw)


def regress_result(result: RegressionResult, model_spec: ModelSpecProto, raw: Any) -> RegressResult:
    values = np.array([r.value for r in result.regressions], dtype=np.float32)
    return RegressResult(values, ModelSpec.from_proto(model_spec), raw)


def multi_inference_result(response: MultiInferenceResponse) -> MultiInferenceResult:
    results: list[ClassifyResult | RegressResult] = []
    for item in response.results:
        if item.HasField("classification_result"):
            results.append(classify_result(item.classification_result, item.model_spec, item))
        else:
            results.append(regress_result(item.regression_result, item.model_spec, item))
    return MultiInferenceResult(results, response)


def metadata_result(response: GetModelMetadataResponse) -> ModelMetadata:
    pb = protos()
    sig_map = pb.get_model_metadata_pb2.SignatureDefMap()
    if "signature_def" in response.metadata:
        response.metadata["signature_def"].Unpack(sig_map)
    # TF2 exports list __saved_model_init_op, which no call can run: .raw still has it.
    public = {k: v for k, v in sig_map.signature_def.items() if not k.startswith("__")}
    return ModelMetadata(ModelSpec.from_proto(response.model_spec), signature_infos(public), response)


def status_list(response: GetModelStatusResponse) -> list[VersionStatus]:
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
    grpc = import_grpc()
    for member in grpc.StatusCode:
        if member.value[0] == code:
            return str(member.name)
    return str(code)


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


_METHOD_NAMES = {"Classify": "tensorflow/serving/classify", "Regress": "tensorflow/serving/regress"}
# The outputs TF Serving reads from a signature of another method name (no method check).
_ANSWER_KEYS = {"Classify": {"classes", "scores"}, "Regress": {"outputs"}}


def can_answer(sig: SignatureInfo, method: str) -> bool:
    """Whether TF Serving can run Classify or Regress (``method``) on a signature: one of that
    method, or (the method name is not checked by default) one input and the outputs it reads."""
    if sig.method_name == _METHOD_NAMES[method]:
        return True
    return len(sig.inputs) == 1 and bool(_ANSWER_KEYS[method] & set(sig.outputs))


def wrong_kind_of_signature(
    exc: ServingCallError,
    method: str,
    model: str,
    signature: str | None,
    signatures: Mapping[str, SignatureInfo],
) -> InvalidInputError | None:
    """One line for a Classify/Regress (``method``) refused because the signature cannot answer
    it, naming the signatures that can; None when that is not why it was refused.

    The server's own message may carry a whole SignatureDef over many lines: its first line
    stays, as the cause.
    """
    key = signature or DEFAULT_SIGNATURE
    sig = signatures.get(key)
    if sig is None or can_answer(sig, method):
        return None
    verb = method.lower()
    fitting = sorted(k for k, s in signatures.items() if not k.startswith("__") and can_answer(s, method))
    would = f"signatures that can: {', '.join(fitting)}" if fitting else f"no signature here can {verb}"
    cause = (exc.details or str(exc)).strip().splitlines()[0]
    return InvalidInputError(
        f"{method} model {model!r}: signature {key!r} is a {sig.method_name or 'method-less'} "
        f"signature that cannot {verb}; {would} (the server said: {cause})",
        code=exc.code,
        details=exc.details,
        model=model,
        version=exc.version,
    )


def check_reload(response: ReloadConfigResponse) -> None:
    code = response.status.error_code
    if code:
        raise error_from_status(_error_code_name(code), response.status.error_message, method="ReloadConfig")
