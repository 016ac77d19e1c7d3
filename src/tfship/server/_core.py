"""The RPCs of TensorFlow Serving 2.15.1, on protos, with its codes, messages and check order.

gRPC and REST both call ``ServingCore``; each method takes a request message and returns the
response message or raises ``RpcError``. The rules follow ``predict_util.cc``,
``classifier.cc``, ``regressor.cc``, ``multi_inference.cc``, ``get_model_metadata_impl.cc``,
``get_model_status_impl.cc`` and ``model_service_impl.cc``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, Union

import grpc
from numpy.typing import NDArray

from tfship._wire import (
    CLASSIFY_METHOD,
    DEFAULT_SIGNATURE,
    PREDICT_METHOD,
    REGRESS_METHOD,
    ClassificationRequest,
    ClassificationResponse,
    GetModelMetadataRequest,
    GetModelMetadataResponse,
    GetModelStatusRequest,
    GetModelStatusResponse,
    InferenceTask,
    ModelSpecProto,
    MultiInferenceRequest,
    MultiInferenceResponse,
    PredictRequest,
    PredictResponse,
    RegressionRequest,
    RegressionResponse,
    ReloadConfigRequest,
    ReloadConfigResponse,
    SignatureDef,
    encode_predict_response,
    protos,
)
from tfship.server._examples import (
    _check_example_method,
    classification_outputs,
    fill_classifications,
    fill_regressions,
    regression_outputs,
    serialized_examples,
)
from tfship.server._manager import ModelManager, Servable
from tfship.server._metrics import Metrics
from tfship.server._predict import (
    PredictPlan,
    _output_aliases,
    _output_enum,
    _run,
    _run_tensors,
    check_feed_dtypes,
    predict_feeds,
)
from tfship.server._request_log import (
    CLASSIFY_LOG,
    MULTI_INFERENCE_LOG,
    PREDICT_LOG,
    REGRESS_LOG,
    RequestLog,
)
from tfship.server._status import RpcError, from_exception, invalid, status_fields

_Answer = TypeVar("_Answer")  # what a Classify or Regress run answers
# the requests whose model_spec names the servable
_WithModelSpec = Union[
    PredictRequest, ClassificationRequest, RegressionRequest, GetModelMetadataRequest, GetModelStatusRequest
]


def fill_model_spec(out: ModelSpecProto, name: str, signature: str | None, version: int | None) -> None:
    """TF Serving's ``MakeModelSpec``: clear, then name, resolved signature, loaded version."""
    out.Clear()
    out.name = name
    if signature is not None:
        out.signature_name = signature or DEFAULT_SIGNATURE
    if version is not None:
        out.version.value = version


def _require_model_spec(request: _WithModelSpec) -> None:
    if not request.HasField("model_spec"):
        raise invalid("Missing ModelSpec")


class ServingCore:
    """Implements every RPC on top of a ``ModelManager``.

    Example:
        >>> import numpy as np
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
    def predict(self, request: PredictRequest) -> PredictResponse:
        """PredictionService.Predict, as a ``PredictResponse`` message."""
        return protos().predict_pb2.PredictResponse.FromString(self.predict_bytes(request))

    def predict_bytes(self, request: PredictRequest) -> bytes:
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

    def predict_on(self, servable: Servable, request: PredictRequest) -> PredictResponse:
        """Predict against one loaded version (also used by warmup)."""
        data = self.predict_bytes_on(servable, request)
        return protos().predict_pb2.PredictResponse.FromString(data)

    def predict_bytes_on(self, servable: Servable, request: PredictRequest) -> bytes:
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
        self, servable: Servable, request: PredictRequest
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

    def _check_method(self, signature: SignatureDef) -> None:
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
    def classify(self, request: ClassificationRequest) -> ClassificationResponse:
        """PredictionService.Classify."""
        return self._logged(CLASSIFY_LOG, request, self._on_servable(request, self.classify_on))

    def classify_on(self, servable: Servable, request: ClassificationRequest) -> ClassificationResponse:
        """Classify against one loaded version."""
        key, values, rows = self._run_examples(servable, request, CLASSIFY_METHOD, classification_outputs)
        response = protos().classification_pb2.ClassificationResponse()
        fill_model_spec(response.model_spec, request.model_spec.name, key, servable.version)
        fill_classifications(response.result, values, rows)
        return response

    def regress(self, request: RegressionRequest) -> RegressionResponse:
        """PredictionService.Regress."""
        return self._logged(REGRESS_LOG, request, self._on_servable(request, self.regress_on))

    def _logged(
        self,
        kind: int,
        request: ClassificationRequest | RegressionRequest,
        response: ClassificationResponse | RegressionResponse,
    ) -> ClassificationResponse | RegressionResponse:
        # the answer's model spec names the version and signature that answered
        if self.request_log is not None:
            spec = response.model_spec
            self.request_log.log(kind, request, response, spec.name, spec.signature_name, spec.version.value)
        return response

    def regress_on(self, servable: Servable, request: RegressionRequest) -> RegressionResponse:
        """Regress against one loaded version."""
        key, values, rows = self._run_examples(servable, request, REGRESS_METHOD, regression_outputs)
        response = protos().regression_pb2.RegressionResponse()
        fill_model_spec(response.model_spec, request.model_spec.name, key, servable.version)
        fill_regressions(response.result, values["outputs"], rows)
        return response

    def _on_servable(
        self, request: ClassificationRequest | RegressionRequest, run: Callable[[Servable, Any], _Answer]
    ) -> _Answer:
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
        request: ClassificationRequest | RegressionRequest,
        method: str,
        outputs_of: Callable[[SignatureDef, bool], list[str]],
    ) -> tuple[str, dict[str, NDArray[Any]], int]:
        """Classify/Regress up to the response: (signature key, output values, example count)."""
        key, signature = self._example_signature(servable, request.model_spec, method)
        outputs = outputs_of(signature, self.method_name_check)
        examples = serialized_examples(request.input)
        values = _run(servable, {"inputs": examples}, key, outputs)
        return key, values, len(examples)

    def _example_signature(
        self, servable: Servable, spec: ModelSpecProto, method: str
    ) -> tuple[str, SignatureDef]:
        key = spec.signature_name or DEFAULT_SIGNATURE
        signature = servable.signatures.get(key)
        if signature is None:
            raise invalid(f"No signature was found with the name: {key}")
        if self.method_name_check:
            _check_example_method(signature, method)
        return key, signature

    # MultiInference --------------------------------------------------------------------------
    def multi_inference(self, request: MultiInferenceRequest) -> MultiInferenceResponse:
        """PredictionService.MultiInference."""
        apis = protos()
        spec = request.tasks[0].model_spec if request.tasks else apis.model_pb2.ModelSpec()
        with self.manager.servable(spec) as servable:
            response = self.multi_inference_on(servable, request)
        if self.request_log is not None:  # its tasks name their signatures
            self.request_log.log(MULTI_INFERENCE_LOG, request, response, spec.name, "", servable.version)
        return response

    def multi_inference_on(
        self, servable: Servable, request: MultiInferenceRequest
    ) -> MultiInferenceResponse:
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

    def _plan_tasks(
        self, servable: Servable, tasks: Sequence[InferenceTask]
    ) -> list[tuple[str, SignatureDef, list[str]]]:
        """Check every task as TF Serving does; (signature key, signature, output aliases) each."""
        model_name = ""
        seen: set[str] = set()
        plans: list[tuple[str, SignatureDef, list[str]]] = []
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
    def get_model_metadata(self, request: GetModelMetadataRequest) -> GetModelMetadataResponse:
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
    def get_model_status(self, request: GetModelStatusRequest) -> GetModelStatusResponse:
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

    def reload_config(self, request: ReloadConfigRequest) -> tuple[ReloadConfigResponse, RpcError | None]:
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
