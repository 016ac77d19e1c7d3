"""The RPCs of TensorFlow Serving 2.15.1, on protos, with its codes, messages and check order.

gRPC and REST both call ``ServingCore``; each method takes a request message and returns the
response message or raises ``RpcError``. The rules follow ``predict_util.cc``,
``classifier.cc``, ``regressor.cc``, ``multi_inference.cc``, ``get_model_metadata_impl.cc``,
``get_model_status_impl.cc`` and ``model_service_impl.cc``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc
import numpy as np
from numpy.typing import NDArray

from tfship._wire import (
    CLASSIFY_METHOD,
    DEFAULT_SIGNATURE,
    DT_FLOAT,
    DT_STRING,
    PREDICT_METHOD,
    REGRESS_METHOD,
    TensorDecodeError,
    decode_tensor,
    dtype_enum_name,
    encode_predict_response,
    enum_of_array,
    protos,
    tensor_numpy_dtype,
)
from tfship._wire import tf_dtype_name as dtype_name
from tfship.server._manager import ModelManager, Servable
from tfship.server._metrics import Metrics
from tfship.server._request_log import (
    CLASSIFY_LOG,
    MULTI_INFERENCE_LOG,
    PREDICT_LOG,
    REGRESS_LOG,
    RequestLog,
)
from tfship.server._status import RpcError, from_exception, invalid, status_fields


def fill_model_spec(out: Any, name: str, signature: str | None, version: int | None) -> None:
    """TF Serving's ``MakeModelSpec``: clear, then name, resolved signature, loaded version."""
    out.Clear()
    out.name = name
    if signature is not None:
        out.signature_name = signature or DEFAULT_SIGNATURE
    if version is not None:
        out.version.value = version


def _require_model_spec(request: Any) -> None:
    if not request.HasField("model_spec"):
        raise invalid("Missing ModelSpec")


def _debug_shape_text(shape: Sequence[int]) -> str:
    # TensorShape::DebugString of a value's shape, "[2,3]": TF Serving's texts print it so;
    # tfship._wire.shape_text prints a signature's shape, "[?, 3]", in tfship's own messages.
    return "[" + ",".join(str(d) for d in shape) + "]"


def _keys(mapping: Any) -> str:
    return ",".join(sorted(mapping))


class ServingCore:
    """Implements every RPC on top of a ``ModelManager``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship._wire import encode_tensor
        >>> from tfship.server import ModelConfig
        >>> manager = ModelManager([ModelConfig("m", "m")])
        >>> manager.start()
        >>> request = protos().predict_pb2.PredictRequest()
        >>> request.model_spec.name = "m"
        >>> request.inputs["x"].CopyFrom(encode_tensor(np.ones((1, 3), np.float32)))
        >>> ServingCore(manager).predict(request).outputs["y"].float_val
        [2.0, 2.0, 2.0]
        >>> manager.stop()
    """

    def __init__(
        self,
        manager: ModelManager,
        *,
        method_name_check: bool = False,
        metrics: Metrics | None = None,
        tensor_content: bool = False,
        request_log: RequestLog | None = None,
    ) -> None:
        self.manager = manager
        # --enable_serialization_as_tensor_content (TF Serving 2.19+): Predict's outputs as bytes
        self.tensor_content = tensor_content
        # the models' logging_config: each answered Predict, Classify, Regress, MultiInference
        self.request_log = request_log
        # the Prometheus page of --monitoring_config_file (a Metrics), served on the REST port
        self.metrics = metrics
        # --enable_signature_method_name_check (off by default in TF Serving 2.15.1)
        self.method_name_check = method_name_check

    # Predict ---------------------------------------------------------------------------------
    def predict(self, request: Any) -> Any:
        """PredictionService.Predict, as a ``PredictResponse`` message."""
        return protos().predict_pb2.PredictResponse.FromString(self.predict_bytes(request))

    def predict_bytes(self, request: Any) -> bytes:
        """PredictionService.Predict, as the serialized ``PredictResponse`` sent on the wire."""
        # _on_servable written out: this is the path of every Predict.
        if not request.HasField("model_spec"):
            raise invalid("Missing ModelSpec")
        servable = self.manager.acquire(request.model_spec)
        try:
            answer = self.predict_bytes_on(servable, request)
        finally:
            servable.release()
        if self.request_log is not None:
            spec = request.model_spec
            key = spec.signature_name or DEFAULT_SIGNATURE
            self.request_log.log(PREDICT_LOG, request, answer, spec.name, key, servable.version)
        return answer

    def predict_on(self, servable: Servable, request: Any) -> Any:
        """Predict against one loaded version (also used by warmup)."""
        data = self.predict_bytes_on(servable, request)
        return protos().predict_pb2.PredictResponse.FromString(data)

    def predict_bytes_on(self, servable: Servable, request: Any) -> bytes:
        """Predict against one loaded version; outputs go straight to their wire bytes."""
        spec = request.model_spec
        key = spec.signature_name or DEFAULT_SIGNATURE
        plan = servable.plans.get(key)
        # A request this version's plan takes whole (the signature was found and passed the
        # method check when the plan was made) runs without another lookup; the first request
        # of a signature, a batched version and any other request take predict_outputs.
        if plan is not None and plan.runner is not None and servable.batcher is None:
            feeds = plan.feeds(request)
            if feeds is not None:
                try:
                    values = plan.runner(feeds)
                except Exception as exc:  # as Servable.run_now and _run turn it into a status
                    explained = servable.explain(exc)
                    raise (
                        explained if isinstance(explained, RpcError) else from_exception(explained)
                    ) from exc
                return encode_predict_response(
                    plan.answer(values), servable.model_spec(spec.name, key), as_content=self.tensor_content
                )
        key, outputs = self.predict_outputs(servable, request)
        return encode_predict_response(
            outputs, servable.model_spec(spec.name, key), as_content=self.tensor_content
        )

    def predict_outputs(
        self, servable: Servable, request: Any
    ) -> tuple[str, list[tuple[str, NDArray[Any], int]]]:
        """Predict up to the output arrays: (signature key, [(alias, value, DataType)])."""
        key = request.model_spec.signature_name or DEFAULT_SIGNATURE
        signature = servable.signatures.get(key)
        if signature is None:
            raise RpcError(grpc.StatusCode.FAILED_PRECONDITION, f'Serving signature key "{key}" not found.')
        self._check_method(signature)
        plan = servable.plans.get(key)
        if plan is None:
            runner = servable.runner(key, sorted(signature.outputs))
            plan = servable.plans[key] = PredictPlan.of(signature, runner)
        feeds = plan.feeds(request)
        if feeds is not None:  # every input given, of its dtype, no output filter
            aliases = plan.outputs
        else:  # TF Serving's checks in its order, each with its own words
            feeds = predict_feeds(signature, request.inputs)
            aliases = _output_aliases(signature, request.output_filter)
            # TensorFlow checks feed dtypes when the session runs, after every request check;
            # feed shapes are not checked at all: the graph's ops accept them or fail.
            check_feed_dtypes(signature, request.inputs)
        values = _run(servable, feeds, key, aliases)
        return key, [
            (alias, values[alias], _output_enum(signature, alias, values[alias])) for alias in aliases
        ]

    def _check_method(self, signature: Any) -> None:
        allowed = (PREDICT_METHOD, CLASSIFY_METHOD, REGRESS_METHOD)
        if self.method_name_check and signature.method_name not in allowed:
            raise RpcError(
                grpc.StatusCode.INTERNAL,
                "Expected prediction signature method_name to be one of {"
                + ", ".join(allowed)
                + "}. Was: "
                + signature.method_name,
            )

    # Classify / Regress ----------------------------------------------------------------------
    def classify(self, request: Any) -> Any:
        """PredictionService.Classify."""
        return self._logged(CLASSIFY_LOG, request, self._on_servable(request, self.classify_on))

    def classify_on(self, servable: Servable, request: Any) -> Any:
        """Classify against one loaded version."""
        key, values, rows = self._run_examples(servable, request, CLASSIFY_METHOD, classification_outputs)
        response = protos().classification_pb2.ClassificationResponse()
        fill_model_spec(response.model_spec, request.model_spec.name, key, servable.version)
        fill_classifications(response.result, values, rows)
        return response

    def regress(self, request: Any) -> Any:
        """PredictionService.Regress."""
        return self._logged(REGRESS_LOG, request, self._on_servable(request, self.regress_on))

    def _logged(self, kind: int, request: Any, response: Any) -> Any:
        # the answer's model spec names the version and signature that answered
        if self.request_log is not None:
            spec = response.model_spec
            self.request_log.log(kind, request, response, spec.name, spec.signature_name, spec.version.value)
        return response

    def regress_on(self, servable: Servable, request: Any) -> Any:
        """Regress against one loaded version."""
        key, values, rows = self._run_examples(servable, request, REGRESS_METHOD, regression_outputs)
        response = protos().regression_pb2.RegressionResponse()
        fill_model_spec(response.model_spec, request.model_spec.name, key, servable.version)
        fill_regressions(response.result, values["outputs"], rows)
        return response

    def _on_servable(self, request: Any, run: Callable[[Servable, Any], Any]) -> Any:
        # Predict, Classify and Regress: check the spec, then hold the version while it runs.
        _require_model_spec(request)
        servable = self.manager.acquire(request.model_spec)
        try:
            return run(servable, request)
        finally:
            servable.release()

    def _run_examples(
        self,
        servable: Servable,
        request: Any,
        method: str,
        outputs_of: Callable[[Any, bool], list[str]],
    ) -> tuple[str, dict[str, NDArray[Any]], int]:
        """Classify/Regress up to the response: (signature key, output values, example count)."""
        key, signature = self._example_signature(servable, request.model_spec, method)
        outputs = outputs_of(signature, self.method_name_check)
        examples = serialized_examples(request.input)
        values = _run(servable, {"inputs": examples}, key, outputs)
        return key, values, len(examples)

    def _example_signature(self, servable: Servable, spec: Any, method: str) -> tuple[str, Any]:
        key = spec.signature_name or DEFAULT_SIGNATURE
        signature = servable.signatures.get(key)
        if signature is None:
            raise invalid(f"No signature was found with the name: {key}")
        if self.method_name_check:
            _check_example_method(signature, method)
        return key, signature

    # MultiInference --------------------------------------------------------------------------
    def multi_inference(self, request: Any) -> Any:
        """PredictionService.MultiInference."""
        apis = protos()
        spec = request.tasks[0].model_spec if request.tasks else apis.model_pb2.ModelSpec()
        with self.manager.servable(spec) as servable:
            response = self.multi_inference_on(servable, request)
        if self.request_log is not None:  # its tasks name their signatures
            self.request_log.log(MULTI_INFERENCE_LOG, request, response, spec.name, "", servable.version)
        return response

    def multi_inference_on(self, servable: Servable, request: Any) -> Any:
        """MultiInference against one loaded version: one run for every task.

        As ``multi_inference.cc`` in TF Serving 2.15.1: the serialized Examples are fed to the
        input tensor of every task's signature (signatures over different inputs each get
        them), the union of the tasks' outputs is fetched once, and each task reads its own.
        """
        plans = self._plan_tasks(servable, request.tasks)
        examples = serialized_examples(request.input)
        feeds = {signature.inputs["inputs"].name: examples for _, signature, _ in plans}
        fetches = {
            signature.outputs[alias].name: (key, alias)
            for key, signature, aliases in plans
            for alias in aliases
        }
        by_tensor = _run_tensors(servable, feeds, fetches)
        response = protos().inference_pb2.MultiInferenceResponse()
        for task, (_, signature, aliases) in zip(request.tasks, plans):
            values = {alias: by_tensor[signature.outputs[alias].name] for alias in aliases}
            result = response.results.add()
            if task.method_name == CLASSIFY_METHOD:
                fill_classifications(result.classification_result, values, len(examples))
            else:
                fill_regressions(result.regression_result, values["outputs"], len(examples))
            fill_model_spec(
                result.model_spec,
                task.model_spec.name,
                task.model_spec.signature_name,
                servable.version,
            )
        return response

    def _plan_tasks(self, servable: Servable, tasks: Any) -> list[tuple[str, Any, list[str]]]:
        """Check every task as TF Serving does; (signature key, signature, output aliases) each."""
        model_name = ""
        seen: set[str] = set()
        plans: list[tuple[str, Any, list[str]]] = []
        for task in tasks:
            if not task.model_spec.name:
                raise invalid("Found ModelSpec with an empty model name.")
            if model_name and task.model_spec.name != model_name:
                raise invalid("All ModelSpecs in a MultiInferenceRequest must access the same model name.")
            model_name = task.model_spec.name
            key = task.model_spec.signature_name or DEFAULT_SIGNATURE
            if key in seen:
                raise invalid(f"Duplicate evaluation of signature: {key}")
            seen.add(key)
            signature = servable.signatures.get(key)
            if signature is None:
                raise invalid(f"Requested signature not found in model graph: {key}")
            if task.method_name == CLASSIFY_METHOD:
                outputs = classification_outputs(signature, self.method_name_check)
            elif task.method_name == REGRESS_METHOD:
                outputs = regression_outputs(signature, self.method_name_check)
            else:
                raise RpcError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    f"Unsupported signature method_name: {task.method_name}",
                )
            plans.append((key, signature, outputs))
        return plans

    # GetModelMetadata ------------------------------------------------------------------------
    def get_model_metadata(self, request: Any) -> Any:
        """PredictionService.GetModelMetadata: every SignatureDef of the serve MetaGraph."""
        apis = protos()
        _require_model_spec(request)
        if not request.metadata_field:
            raise invalid("GetModelMetadataRequest must specify at least one metadata_field")
        for name in request.metadata_field:
            if name != "signature_def":
                raise invalid(f"Metadata field {name} is not supported")
        response = apis.get_model_metadata_pb2.GetModelMetadataResponse()
        with self.manager.servable(request.model_spec) as servable:
            signature_map = apis.get_model_metadata_pb2.SignatureDefMap()
            for key, signature in servable.signatures.items():
                signature_map.signature_def[key].CopyFrom(signature)
            fill_model_spec(response.model_spec, request.model_spec.name, None, servable.version)
        response.metadata["signature_def"].Pack(signature_map)
        return response

    # ModelService ----------------------------------------------------------------------------
    def get_model_status(self, request: Any) -> Any:
        """ModelService.GetModelStatus: last state of each version, newest first."""
        apis = protos()
        _require_model_spec(request)
        spec = request.model_spec
        version = int(spec.version.value) if spec.HasField("version") else None
        events = self.manager.status(spec.name, version)
        response = apis.get_model_status_pb2.GetModelStatusResponse()
        state_enum = apis.get_model_status_pb2.ModelVersionStatus.State
        for event in events:
            entry = response.model_version_status.add(
                version=event.version, state=state_enum.Value(event.state)
            )
            entry.status.error_code = status_fields(event.error)["error_code"]
            entry.status.error_message = status_fields(event.error)["error_message"]
        return response

    def reload_config(self, request: Any) -> tuple[Any, RpcError | None]:
        """ModelService.HandleReloadConfigRequest; the response's status mirrors the RPC's."""
        from tfship.server._config import from_config_list, logging_by_model
        from tfship.server._status import ServerConfigError

        response = protos().model_management_pb2.ReloadConfigResponse()
        error: RpcError | None = None
        if request.config.WhichOneof("config") != "model_config_list":
            error = invalid(
                "ServerModelConfig type not supported by HandleReloadConfigRequest. Only "
                "ModelConfigList is currently supported"
            )
        else:
            try:
                models = from_config_list(request.config.model_config_list, where="config")
                self.manager.apply_config(models)
                if self.request_log is not None:
                    self.request_log.configure(logging_by_model(models))
            except ServerConfigError as exc:
                error = invalid(str(exc).removeprefix("config: "))
            except RpcError as exc:
                error = exc
        fields = status_fields(error)
        response.status.error_code = fields["error_code"]
        response.status.error_message = fields["error_message"]
        return response, error


# Predict helpers -----------------------------------------------------------------------------
class PredictPlan:
    """What a Predict request on one signature needs of it, read once per loaded version.

    ``feeds`` takes the common request (every input given, each of its signature's dtype, no
    output filter) in one pass; any other request goes through ``predict_feeds`` and the
    checks after it, which say what is wrong in TF Serving's words and order.
    """

    def __init__(
        self,
        inputs: list[tuple[str, int]],
        outputs: list[str],
        output_enums: list[int] | None = None,
        runner: Callable[[Mapping[str, NDArray[Any]]], list[Any]] | None = None,
    ) -> None:
        self.inputs = inputs  # (alias, DataType number), sorted by alias
        self.outputs = outputs  # every output alias, sorted
        # each output's signature dtype, written for a value whose numpy type has no TF twin
        self.output_enums = output_enums or [0] * len(outputs)
        #: the version's run of the signature's inputs to ``outputs`` (None: run it otherwise)
        self.runner = runner
        # (alias, DataType, numpy dtype, its little-endian twin) of inputs read from
        # tensor_content without decode_tensor; None for the other dtypes (strings, ...)
        self._content: list[tuple[str, int, Any, Any] | None] = [
            _content_reader(alias, want) for alias, want in inputs
        ]

    @classmethod
    def of(
        cls,
        signature: Any,
        runner: Callable[[Mapping[str, NDArray[Any]]], list[Any]] | None = None,
    ) -> PredictPlan:
        """The plan of ``signature``; ``runner`` runs its inputs to all its outputs (sorted)."""
        inputs = [(alias, int(signature.inputs[alias].dtype)) for alias in sorted(signature.inputs)]
        outputs = sorted(signature.outputs)
        enums = [int(signature.outputs[alias].dtype) for alias in outputs]
        return cls(inputs, outputs, enums, runner)

    def feeds(self, request: Any) -> dict[str, NDArray[Any]] | None:
        """The decoded feeds of a request that passes every check, else None.

        A dense tensor in ``tensor_content`` whose size fits its shape is read in place; any
        other tensor goes through ``decode_tensor``, and any doubt returns None, so that the
        full checks say what is wrong.
        """
        inputs = request.inputs
        if request.output_filter or len(inputs) != len(self.inputs):
            return None
        feeds: dict[str, NDArray[Any]] = {}
        for (alias, want), reader in zip(self.inputs, self._content):
            proto = inputs.get(alias)
            if proto is None or (want and proto.dtype != want):
                return None
            content = proto.tensor_content if reader is not None else b""
            if content and reader is not None:
                value = _read_content(content, proto.tensor_shape.dim, reader)
                if value is None:
                    return None
                feeds[alias] = value
                continue
            try:
                feeds[alias] = decode_tensor(proto)
            except TensorDecodeError:
                return None
        return feeds

    def answer(self, values: Sequence[Any]) -> list[tuple[str, NDArray[Any], int]]:
        """The outputs' values (in the order of ``outputs``) as the answer's entries."""
        entries = []
        for alias, value, fallback in zip(self.outputs, values, self.output_enums):
            value = np.asarray(value)
            try:
                enum = enum_of_array(value)
            except TypeError:  # a numpy type without a TF twin takes the signature's
                enum = fallback
            entries.append((alias, value, enum))
        return entries


def _content_reader(alias: str, want: int) -> tuple[str, int, Any, Any] | None:
    if not want or want == DT_STRING:
        return None
    try:
        dtype = tensor_numpy_dtype(want)
        return alias, want, dtype, dtype.newbyteorder("<")
    except (TensorDecodeError, TypeError, ValueError):
        return None


def _read_content(content: bytes, dims: Any, reader: tuple[str, int, Any, Any]) -> NDArray[Any] | None:
    """``decode_tensor``'s reading of a non-empty ``tensor_content`` for the shape ``dims``,
    or None where decode_tensor would refuse it or read it otherwise (an empty shape)."""
    shape = [d.size for d in dims]
    if len(shape) > 254:
        return None
    count = 1
    for size in shape:
        if size < 0:
            return None
        count *= size
    dtype = reader[2]
    if count == 0 or count * dtype.itemsize != len(content):
        return None
    # one copy, as decode_tensor makes: aligned, writable, independent of the message
    value: NDArray[Any] = np.frombuffer(content, dtype=reader[3]).astype(dtype).reshape(shape)
    return value


def predict_feeds(signature: Any, inputs: Mapping[str, Any]) -> dict[str, NDArray[Any]]:
    """Check the request inputs against the signature and decode them (TF's GetInputValues)."""
    sig_inputs, defaults = signature.inputs, signature.defaults
    if len(inputs) > len(sig_inputs) or (len(inputs) < len(sig_inputs) and not defaults):
        extra = sorted(set(inputs) - set(sig_inputs))
        missing = sorted(set(sig_inputs) - set(inputs))
        raise invalid(
            f"input size does not match signature: {len(inputs)}!={len(sig_inputs)} "
            f"len({{{_keys(inputs)}}}) != len({{{_keys(sig_inputs)}}}). "
            f"Sent extra: {{{','.join(extra)}}}. Missing but required: {{{','.join(missing)}}}."
        )
    feeds: dict[str, NDArray[Any]] = {}
    used: list[str] = []
    for alias in sorted(sig_inputs):
        info = sig_inputs[alias]
        if alias in inputs:
            proto = inputs[alias]
            used.append(alias)
        elif alias in defaults:
            proto = defaults[alias]
        else:
            raise invalid(
                f"Signature input alias: {alias}(feed name: {info.name}) not found in request "
                f"and no default value provided. Inputs expected to be in the request "
                f"{{{_keys(inputs)}}}, or default input alias set: {_keys(defaults)}"
            )
        try:
            feeds[alias] = decode_tensor(proto)
        except TensorDecodeError as exc:
            raise invalid(f"tensor parsing error: {alias}") from exc
    if inputs and len(used) != len(inputs):
        raise invalid(
            f"Inputs contains invalid name. Used request inputs: {','.join(sorted(used))}, "
            f"request input: {_keys(inputs)}"
        )
    return feeds


def check_feed_dtypes(signature: Any, inputs: Mapping[str, Any]) -> None:
    """The session's call-frame check: each fed tensor has its signature input's dtype."""
    for index, alias in enumerate(sorted(signature.inputs)):
        proto = inputs.get(alias, signature.defaults.get(alias))
        want = int(signature.inputs[alias].dtype)
        if proto is not None and want and int(proto.dtype) != want:
            raise invalid(
                f"Expects arg[{index}] to be {dtype_name(want)} but "
                f"{dtype_name(int(proto.dtype))} is provided"
            )


def _output_aliases(signature: Any, output_filter: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    for alias in output_filter:
        if alias not in signature.outputs:
            raise invalid(
                f"output tensor alias not found in signature: {alias} Outputs expected to be "
                f"in the set {{{_keys(signature.outputs)}}}."
            )
        if alias in seen:
            raise invalid(f"duplicate output tensor alias: {alias}")
        seen.add(alias)
    return list(output_filter) if output_filter else sorted(signature.outputs)


def _output_enum(signature: Any, alias: str, value: NDArray[Any]) -> int:
    # Tensor::AsProtoField writes the tensor's own dtype; numpy types without a TF twin
    # take the signature's.
    try:
        return enum_of_array(value)
    except TypeError:
        return int(signature.outputs[alias].dtype)


def _run(
    servable: Servable, feeds: Mapping[str, Any], key: str, outputs: Sequence[str]
) -> dict[str, NDArray[Any]]:
    from tfship.server._status import from_exception

    try:
        result = servable.run(feeds, key, outputs)
    except RpcError:
        raise
    except Exception as exc:  # the engine's failures become statuses, never tracebacks
        raise from_exception(exc) from exc
    return {alias: np.asarray(result[alias]) for alias in outputs}


def _run_tensors(
    servable: Servable, feeds: Mapping[str, Any], fetches: Mapping[str, tuple[str, str]]
) -> dict[str, NDArray[Any]]:
    from tfship.server._status import from_exception

    try:
        result = servable.run_tensors(feeds, fetches)
    except RpcError:
        raise
    except Exception as exc:  # the engine's failures become statuses, never tracebacks
        raise from_exception(exc) from exc
    return {name: np.asarray(value) for name, value in result.items()}


# Classify / Regress helpers ------------------------------------------------------------------
def serialized_examples(input_proto: Any) -> NDArray[Any]:
    """The request's Examples as a 1-D string tensor; context bytes are prepended (merge)."""
    kind = input_proto.WhichOneof("kind")
    if kind == "example_list":
        blobs = [e.SerializeToString() for e in input_proto.example_list.examples]
    elif kind == "example_list_with_context":
        with_context = input_proto.example_list_with_context
        context = with_context.context.SerializeToString()
        blobs = [context + e.SerializeToString() for e in with_context.examples]
    else:
        blobs = []
    if not blobs:
        raise invalid("Input is empty.")
    out = np.empty(len(blobs), dtype=object)
    out[:] = blobs
    return out


def _check_example_method(signature: Any, method: str) -> None:
    # --enable_signature_method_name_check for Classify and Regress (and their MultiInference).
    if signature.method_name != method:
        kind = "classification" if method == CLASSIFY_METHOD else "regression"
        raise invalid(f"Expected {kind} signature method_name to be {method}. Was: " + signature.method_name)


def classification_outputs(signature: Any, method_check: bool) -> list[str]:
    """TF Serving's PreProcessClassification: the output aliases to fetch, or the error."""
    if method_check:
        _check_example_method(signature, CLASSIFY_METHOD)
    if len(signature.inputs) != 1:
        raise invalid("Expected one input Tensor.")
    if len(signature.outputs) not in (1, 2):
        raise invalid(f"Expected one or two output Tensors, found {len(signature.outputs)}")
    if "inputs" not in signature.inputs:
        raise invalid(f"No classification inputs found in SignatureDef: {signature}")
    outputs = [k for k in ("classes", "scores") if k in signature.outputs]
    if not outputs:
        raise invalid(
            'Expected classification signature outputs to contain at least one of "classes" or '
            f'"scores". Signature was: {signature}'
        )
    return outputs


def regression_outputs(signature: Any, method_check: bool) -> list[str]:
    """TF Serving's PreProcessRegression: ``["outputs"]`` or the error."""
    if method_check:
        _check_example_method(signature, REGRESS_METHOD)
    if len(signature.inputs) != 1:
        raise invalid("Expected one input Tensor.")
    if len(signature.outputs) != 1:
        raise invalid("Expected one output Tensor.")
    if "inputs" not in signature.inputs:
        raise invalid(f"No regression inputs found in SignatureDef: {signature}")
    if "outputs" not in signature.outputs:
        raise invalid(f"No regression outputs found in SignatureDef: {signature}")
    return ["outputs"]


def _check_class_tensor(name: str, value: NDArray[Any], want: int, num_examples: int) -> None:
    if value.ndim != 2:
        raise invalid(
            f"Expected Tensor shape: [batch_size num_classes] but got {_debug_shape_text(value.shape)}"
        )
    enum = enum_of_array(value)
    if enum != want:
        kind = "DT_STRING" if want == DT_STRING else "DT_FLOAT"
        raise invalid(f"Expected {name} Tensor of {kind}. Got: {dtype_enum_name(enum)}")
    if value.shape[0] != num_examples:
        raise invalid(f"Expected {name} output batch size of {num_examples}. Got: {value.shape[0]}")


def fill_classifications(result: Any, values: Mapping[str, NDArray[Any]], num_examples: int) -> None:
    """TF Serving's PostProcessClassificationResult into a ``ClassificationResult``."""
    classes, scores = values.get("classes"), values.get("scores")
    if classes is not None:
        _check_class_tensor("classes", classes, DT_STRING, num_examples)
    if scores is not None:
        _check_class_tensor("scores", scores, DT_FLOAT, num_examples)
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise invalid(
            "Tensors class and score should match in dim_size(1). Got "
            f"{classes.shape[1]} vs. {scores.shape[1]}"
        )
    width = (classes if classes is not None else scores).shape[1]  # type: ignore[union-attr]
    for row in range(num_examples):
        entry = result.classifications.add()
        for column in range(width):
            cls = entry.classes.add()
            if classes is not None:
                label = classes[row, column]
                text = label if isinstance(label, bytes) else str(label).encode()
                cls.label = text.decode("utf-8", errors="replace")
            if scores is not None:
                cls.score = float(scores[row, column])


def fill_regressions(result: Any, value: NDArray[Any], num_examples: int) -> None:
    """TF Serving's PostProcessRegressionResult into a ``RegressionResult``."""
    if not (value.ndim == 1 or (value.ndim == 2 and value.shape[1] == 1)):
        raise invalid(
            "Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got "
            + _debug_shape_text(value.shape)
        )
    if value.shape[0] != num_examples:
        raise invalid(
            f"Input batch size did not match output batch size: {num_examples} vs. {value.shape[0]}"
        )
    enum = enum_of_array(value)
    if enum != DT_FLOAT:
        raise invalid(f"Expected output Tensor of DT_FLOAT.  Got: {dtype_enum_name(enum)}")
    for number in value.reshape(-1).tolist():
        result.regressions.add(value=number)
