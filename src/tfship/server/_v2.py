"""The Open Inference Protocol (KServe V2) over the serving core, apart from its transports.

REST (``_v2_rest.py``) and gRPC (``_v2_grpc.py``) decode a request's tensors into numpy arrays
and hand them here, with the model, version and parameters; this module picks the version from
the same ``ModelManager`` as TF Serving's API (version policy, hot reload, batching), picks the
signature (the default one, or the one named by the ``signature_name`` parameter), checks the
inputs against it (names, datatypes, shapes), runs it and returns the outputs as arrays with
their V2 datatypes. A Classify or Regress signature runs the same way: its serialized
``tf.Example`` input is a ``BYTES`` tensor. Errors are ``RpcError``s whose code each front end
maps to its own (an HTTP status, a gRPC status).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import numpy as np
from numpy.typing import NDArray

import tfship
from tfship._wire import (
    DEFAULT_SIGNATURE,
    PredictRequest,
    PredictResponse,
    SignatureDef,
    TensorInfoProto,
    V2TensorError,
    decode_tensor,
    encode_tensor,
    enum_of_array,
    protos,
    shape_text,
    v2_datatype,
    v2_datatype_text,
)
from tfship.server._core import ServingCore
from tfship.server._manager import Servable
from tfship.server._predict import _run
from tfship.server._request_log import PREDICT_LOG
from tfship.server._status import RpcError, from_exception, invalid

# The request parameter that names the signature to run (V2 has no field for it).
SIGNATURE_PARAMETER = "signature_name"
# The platform model metadata names, as Triton names a TensorFlow SavedModel's.
PLATFORM = "tensorflow_savedmodel"
# The extensions of the protocol this server speaks.
EXTENSIONS = ("binary_tensor_data",)


@dataclass(frozen=True)
class V2Input:
    """One input tensor of a request, decoded by its front end."""

    name: str
    datatype: str
    value: NDArray[Any]


@dataclass(frozen=True)
class V2Output:
    """One output tensor of an answer."""

    name: str
    datatype: str
    value: NDArray[Any]


@dataclass(frozen=True)
class V2Answer:
    """An inference's answer: the version that ran it, its signature and its outputs."""

    model: str
    version: str
    signature: str
    outputs: list[V2Output]


def tensor_error(exc: V2TensorError) -> RpcError:
    """The status of a request whose tensor does not fit its own datatype and shape."""
    return invalid(str(exc))


class V2Core:
    """The protocol's calls on a ``ServingCore``'s models.

    Example:
        >>> core = V2Core(serving_core)  # doctest: +SKIP
        >>> core.infer("m", "", [V2Input("x", "FP32", np.ones((1, 3), np.float32))]).outputs  # doctest: +SKIP
    """

    def __init__(self, core: ServingCore) -> None:
        self.core = core

    # health and metadata ------------------------------------------------------------------------
    def ready(self) -> bool:
        """Whether every configured model has a version that can serve."""
        manager = self.core.manager
        return all(manager.available_versions(name) for name in manager.model_names())

    def model_ready(self, name: str, version: str) -> bool:
        """Whether ``name`` (at ``version``, or any) can serve now."""
        available = self.core.manager.available_versions(name)
        if not version:
            return bool(available)
        return _version_number(version) in available

    def server_metadata(self) -> dict[str, Any]:
        """The server's name, version and extensions."""
        return {"name": "tfship", "version": tfship.__version__, "extensions": list(EXTENSIONS)}

    def model_metadata(self, name: str, version: str, signature: str | None = None) -> dict[str, Any]:
        """A model's versions and one signature's inputs and outputs (the default one unless
        named); ``parameters`` name that signature and list every one."""
        servable = self._acquire(name, version)
        try:
            key, sig = _signature(servable, signature)
            keys = _signature_keys(servable)
        finally:
            servable.release()
        return {
            "name": name,
            "versions": [str(v) for v in self.core.manager.available_versions(name)],
            "platform": PLATFORM,
            "inputs": [_tensor_metadata(alias, sig.inputs[alias]) for alias in sorted(sig.inputs)],
            "outputs": [_tensor_metadata(alias, sig.outputs[alias]) for alias in sorted(sig.outputs)],
            "parameters": {SIGNATURE_PARAMETER: key, "signatures": ",".join(keys)},
        }

    # inference ----------------------------------------------------------------------------------
    def infer(
        self,
        name: str,
        version: str,
        inputs: Sequence[V2Input],
        outputs: Sequence[str] | None = None,
        parameters: Mapping[str, Any] | None = None,
        *,
        entrypoint: str = "REST",
    ) -> V2Answer:
        """Run one inference; counted and timed in the Prometheus metrics when they are kept."""
        metrics = self.core.metrics
        if metrics is None:
            return self._infer(name, version, inputs, outputs, parameters or {})
        start = time.perf_counter()
        code = "OK"
        try:
            return self._infer(name, version, inputs, outputs, parameters or {})
        except RpcError as exc:
            code = exc.code.name
            raise
        except Exception:
            code = "INTERNAL"
            raise
        finally:
            metrics.record(name, "ModelInfer", entrypoint, code, (time.perf_counter() - start) * 1e6)

    def _infer(
        self,
        name: str,
        version: str,
        inputs: Sequence[V2Input],
        outputs: Sequence[str] | None,
        parameters: Mapping[str, Any],
    ) -> V2Answer:
        requested = parameters.get(SIGNATURE_PARAMETER)
        if requested is not None and not isinstance(requested, str):
            raise invalid(f"parameter '{SIGNATURE_PARAMETER}' must be a string")
        servable = self._acquire(name, version)
        try:
            plan = self._plan(servable, requested)
            feeds = plan.feeds(inputs)
            aliases = plan.outputs if not outputs else _outputs(plan.key, plan.signature, outputs)
            if aliases is plan.outputs and plan.runner is not None and servable.batcher is None:
                values = dict(zip(aliases, _run_bound(servable, plan.runner, feeds)))
            else:
                values = _run(servable, feeds, plan.key, aliases)
            answers = [_output(alias, values[alias], plan.signature.outputs[alias]) for alias in aliases]
            if self.core.request_log is not None:
                self._log(name, servable.version, plan.key, feeds, answers)
            return V2Answer(name, str(servable.version), plan.key, answers)
        finally:
            servable.release()

    def _log(
        self, name: str, version: int, key: str, feeds: Mapping[str, Any], answers: Sequence[V2Output]
    ) -> None:
        """Log an inference as the Predict it amounts to: a model's ``logging_config`` covers
        both protocols, and a PredictionLog is what replay, warmup and promote read."""
        request_log = self.core.request_log
        assert request_log is not None

        def build() -> tuple[PredictRequest, PredictResponse]:
            # by the log's writer, for a sampled request only: nothing here on the request path
            messages = protos().predict_pb2
            request = messages.PredictRequest()
            request.model_spec.name = name
            request.model_spec.version.value = version
            request.model_spec.signature_name = key
            for alias, value in feeds.items():
                request.inputs[alias].CopyFrom(encode_tensor(value))
            response = messages.PredictResponse()
            response.model_spec.CopyFrom(request.model_spec)
            for answer in answers:
                response.outputs[answer.name].CopyFrom(encode_tensor(answer.value))
            return request, response

        request_log.log(PREDICT_LOG, build, None, name, key, version)

    def _plan(self, servable: Servable, requested: str | None) -> _Plan:
        # what each loaded version's signatures need of a request, read once per version
        plans = servable.v2_plans
        plan: _Plan | None = plans.get(requested)
        if plan is None:
            key, signature = _signature(servable, requested)
            plan = _Plan(key, signature, servable)
            if len(plans) < 64:  # names a client made up are not kept
                plans[requested] = plan
        return plan

    def _acquire(self, name: str, version: str) -> Servable:
        number = _version_number(version) if version else None
        if not name:
            raise invalid("a model name is required")
        try:
            return self.core.manager.acquire_version(name, number)
        except RpcError as exc:
            if exc.code != grpc.StatusCode.NOT_FOUND:
                raise
            which = f"'{name}'" if not version else f"'{name}' version {version}"
            known = self.core.manager.available_versions(name)
            hint = (
                f" (available versions: {', '.join(map(str, known))})"
                if known
                else f" (models: {', '.join(self.core.manager.model_names()) or 'none'})"
            )
            raise RpcError(
                grpc.StatusCode.NOT_FOUND, f"Request for unknown model: {which} is not found{hint}"
            ) from None


def _version_number(text: str) -> int:
    if not text.isdigit() or len(text) > 18:
        raise invalid(f"model version '{text}' is not a version number")
    return int(text)


def _signature_keys(servable: Servable) -> list[str]:
    return sorted(key for key in servable.signatures if not key.startswith("__"))


def _signature(servable: Servable, requested: str | None) -> tuple[str, Any]:
    keys = _signature_keys(servable)
    if requested is None:
        key = DEFAULT_SIGNATURE if DEFAULT_SIGNATURE in keys or not keys else keys[0]
    else:
        key = requested
    signature = servable.signatures.get(key) if key in keys else None
    if signature is None:
        raise invalid(
            f"signature '{key}' not found in model '{servable.name}' version {servable.version}: "
            f"it has {', '.join(keys) or 'none'} (choose one with the parameter '{SIGNATURE_PARAMETER}')"
        )
    return key, signature


def _tensor_metadata(alias: str, info: TensorInfoProto) -> dict[str, Any]:
    datatype = v2_datatype(int(info.dtype)) or protos().types_pb2.DataType.Name(int(info.dtype))
    return {"name": alias, "datatype": datatype, "shape": _signature_shape(info) or [-1]}


def _signature_shape(info: TensorInfoProto) -> list[int] | None:
    """A signature tensor's dimensions, -1 where unknown; None for an unknown rank."""
    shape = info.tensor_shape
    if shape.unknown_rank:
        return None
    return [int(d.size) if d.size >= 0 else -1 for d in shape.dim]


class _Plan:
    """What one signature of one loaded version needs of a request, read from it once."""

    def __init__(self, key: str, signature: SignatureDef, servable: Servable) -> None:
        self.key = key
        self.signature = signature
        self.takes = ", ".join(sorted(signature.inputs))
        # alias -> (V2 datatype or None, the datatype named in errors, dimensions or None)
        self.inputs: dict[str, tuple[str | None, str, list[int] | None]] = {}
        for alias, info in signature.inputs.items():
            want = v2_datatype(int(info.dtype))
            shown = v2_datatype_text(int(info.dtype))
            self.inputs[alias] = (want, shown, _signature_shape(info))
        self.order = sorted(signature.inputs)
        self.outputs = sorted(signature.outputs)
        self.defaults = dict(getattr(signature, "defaults", {}).items())
        #: the version's bound run of every input to every output (None: run it otherwise)
        self.runner = servable.runner(key, self.outputs)

    def feeds(self, inputs: Sequence[V2Input]) -> dict[str, NDArray[Any]]:
        """The inputs checked against the signature: names, datatypes and shapes."""
        key = self.key
        feeds: dict[str, NDArray[Any]] = {}
        for tensor in inputs:
            found = self.inputs.get(tensor.name)
            if found is None:
                raise invalid(f"unexpected input '{tensor.name}': signature '{key}' takes {self.takes}")
            want, shown, dims = found
            if tensor.name in feeds:
                raise invalid(f"input '{tensor.name}' is given twice")
            if tensor.datatype != want:
                raise invalid(
                    f"input '{tensor.name}' has datatype {tensor.datatype}, "
                    f"but signature '{key}' takes {shown}"
                )
            shape = tensor.value.shape
            if dims is not None and (
                len(dims) != len(shape) or any(d != s and d != -1 for d, s in zip(dims, shape))
            ):
                raise invalid(
                    f"input '{tensor.name}' has shape {list(shape)}, but signature '{key}' takes "
                    f"{shape_text([None if d < 0 else d for d in dims])}"
                )
            feeds[tensor.name] = tensor.value
        if len(feeds) < len(self.order):
            for alias in self.order:
                if alias in feeds:
                    continue
                default = self.defaults.get(alias)
                if default is None:
                    raise invalid(f"input '{alias}' is missing: signature '{key}' takes {self.takes}")
                feeds[alias] = decode_tensor(default)
        return feeds


def _run_bound(
    servable: Servable, runner: Callable[[Mapping[str, Any]], list[Any]], feeds: Mapping[str, Any]
) -> list[Any]:
    try:
        values: list[Any] = runner(feeds)
    except Exception as exc:  # as the serving core turns a failed run into a status
        explained = servable.explain(exc)
        raise (explained if isinstance(explained, RpcError) else from_exception(explained)) from exc
    return values


def _outputs(key: str, signature: SignatureDef, outputs: Sequence[str] | None) -> list[str]:
    if not outputs:
        return sorted(signature.outputs)
    seen: set[str] = set()
    for alias in outputs:
        if alias not in signature.outputs:
            raise invalid(
                f"unknown output '{alias}': signature '{key}' gives {', '.join(sorted(signature.outputs))}"
            )
        if alias in seen:
            raise invalid(f"output '{alias}' is requested twice")
        seen.add(alias)
    return list(outputs)


def _output(alias: str, value: NDArray[Any], info: TensorInfoProto) -> V2Output:
    value = np.asarray(value)
    try:
        enum = enum_of_array(value)
    except TypeError:  # a numpy type without a TF twin takes the signature's
        enum = int(info.dtype)
    datatype = v2_datatype(enum)
    if datatype is None:
        name = protos().types_pb2.DataType.Name(enum)
        raise RpcError(
            grpc.StatusCode.UNIMPLEMENTED,
            f"output '{alias}' is {name}, which has no Open Inference Protocol datatype",
        )
    return V2Output(alias, datatype, value)
