"""The Open Inference Protocol (KServe V2) over gRPC: ``inference.GRPCInferenceService`` as a
generic handler on tfship's message classes, on the same port as TF Serving's services.

``ModelInfer`` takes tensors as typed ``contents`` or as ``raw_input_contents`` and answers
with ``raw_output_contents``, as Triton does (every V2 client reads them); the signature is the
default one unless the request's ``signature_name`` parameter names another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import grpc

from tfship._wire import (
    ModelInferRequest,
    ModelMetadataRequest,
    ModelMetadataResponse,
    ServerMetadataRequest,
    ServerMetadataResponse,
    V2TensorError,
    array_from_contents,
    array_from_raw,
    encode_infer_response,
    protos,
)
from tfship.server._grpc_calls import answer as _answer
from tfship.server._grpc_calls import identity as _identity
from tfship.server._grpc_calls import logger
from tfship.server._grpc_calls import serialize as _serialize
from tfship.server._status import invalid
from tfship.server._v2 import SIGNATURE_PARAMETER, V2Answer, V2Core, V2Input, tensor_error

if TYPE_CHECKING:
    from google.protobuf.message import Message

SERVICE = "inference.GRPCInferenceService"


def parameters_of(message_map: Mapping[str, Any]) -> dict[str, Any]:  # InferParameter values
    """An ``InferParameter`` map as plain values."""
    values: dict[str, Any] = {}
    for key, parameter in message_map.items():
        which = parameter.WhichOneof("parameter_choice")
        values[key] = None if which is None else getattr(parameter, which)
    return values


def inputs_of(request: ModelInferRequest) -> list[V2Input]:
    """A ``ModelInferRequest``'s input tensors, decoded."""
    raw = request.raw_input_contents
    if raw and len(raw) != len(request.inputs):
        raise invalid(
            f"raw_input_contents has {len(raw)} entries for {len(request.inputs)} inputs: one each, in order"
        )
    inputs: list[V2Input] = []
    try:
        for index, tensor in enumerate(request.inputs):
            shape = list(tensor.shape)
            if raw:
                if tensor.HasField("contents"):
                    raise invalid(f"input '{tensor.name}' has contents beside raw_input_contents")
                value = array_from_raw(raw[index], tensor.datatype, shape, tensor.name)
            else:
                value = array_from_contents(tensor.contents, tensor.datatype, shape, tensor.name)
            inputs.append(V2Input(tensor.name, tensor.datatype, value))
    except V2TensorError as exc:
        raise tensor_error(exc) from None
    return inputs


def response_of(answer: V2Answer, request_id: str) -> bytes:
    """The serialized ``ModelInferResponse`` of an answer, its outputs in
    ``raw_output_contents`` (each output's buffer copied once)."""
    outputs = [(output.name, output.datatype, output.value) for output in answer.outputs]
    parameters = {SIGNATURE_PARAMETER: answer.signature}
    return encode_infer_response(answer.model, answer.version, request_id, parameters, outputs)


def v2_handler(core: V2Core) -> grpc.GenericRpcHandler:
    """The service's six calls as one generic handler."""
    pb = protos().grpc_service_pb2

    def unary(
        call: Callable[[Any], Any],
        request_cls: type[Message],
        serializer: Callable[[Any], bytes] = _serialize,
    ) -> grpc.RpcMethodHandler:
        def handle(request: Message, context: grpc.ServicerContext) -> Any:
            return _answer(context, lambda: call(request))

        return grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=request_cls.FromString, response_serializer=serializer
        )

    parse_infer = pb.ModelInferRequest.FromString

    def infer_bytes(data: bytes, context: grpc.ServicerContext) -> bytes:
        # Parsed here, in the worker, as Predict's requests are: a deserializer given to gRPC
        # runs in its one polling thread, which every call passes through, and under
        # concurrent calls that thread, not the workers, sets the rate.
        try:
            request = parse_infer(data)
        except Exception:  # ended as gRPC ends a request its deserializer refuses
            logger.exception("Exception deserializing message!")
            context.abort(grpc.StatusCode.INTERNAL, "Exception deserializing request!")
            raise  # not reached: abort raises
        return _answer(context, lambda: infer(request))

    def infer(request: ModelInferRequest) -> bytes:
        answer = core.infer(
            request.model_name,
            request.model_version,
            inputs_of(request),
            [output.name for output in request.outputs] or None,
            parameters_of(request.parameters) if request.parameters else {},
            entrypoint="GRPC",
        )
        return response_of(answer, request.id)

    def metadata(request: ModelMetadataRequest) -> ModelMetadataResponse:
        found = core.model_metadata(request.name, request.version)
        response = pb.ModelMetadataResponse(
            name=found["name"], versions=found["versions"], platform=found["platform"]
        )
        for kind in ("inputs", "outputs"):
            for tensor in found[kind]:
                getattr(response, kind).add(
                    name=tensor["name"], datatype=tensor["datatype"], shape=tensor["shape"]
                )
        return response

    def server_metadata(request: ServerMetadataRequest) -> ServerMetadataResponse:
        found = core.server_metadata()
        return pb.ServerMetadataResponse(
            name=found["name"], version=found["version"], extensions=found["extensions"]
        )

    handlers = {
        "ServerLive": unary(lambda request: pb.ServerLiveResponse(live=True), pb.ServerLiveRequest),
        "ServerReady": unary(
            lambda request: pb.ServerReadyResponse(ready=core.ready()), pb.ServerReadyRequest
        ),
        "ModelReady": unary(
            lambda request: pb.ModelReadyResponse(ready=core.model_ready(request.name, request.version)),
            pb.ModelReadyRequest,
        ),
        "ServerMetadata": unary(server_metadata, pb.ServerMetadataRequest),
        "ModelMetadata": unary(metadata, pb.ModelMetadataRequest),
        # bytes in, parsed by the handler; the answer is already its wire bytes
        "ModelInfer": grpc.unary_unary_rpc_method_handler(
            infer_bytes, request_deserializer=_identity, response_serializer=_identity
        ),
    }
    return grpc.method_handlers_generic_handler(SERVICE, handlers)
