"""The gRPC face of the local server: TF Serving's two services as generic handlers on tfship's
message classes, at TF Serving's method paths (``/tensorflow.serving.ModelService/GetModelStatus``)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from tfship._wire import (
    ClassificationRequest,
    GetModelStatusRequest,
    GetModelStatusResponse,
    RegressionRequest,
    ReloadConfigRequest,
    ReloadConfigResponse,
    protos,
)
from tfship.server._config import SslConfig
from tfship.server._core import ServingCore
from tfship.server._grpc_calls import answer as _answer
from tfship.server._grpc_calls import identity as _identity
from tfship.server._grpc_calls import serialize as _serialize
from tfship.server._grpc_calls import status_of as _status
from tfship.server._health import Health
from tfship.server._metrics import Metrics
from tfship.server._pool import CallPool, processors
from tfship.server._status import LocalServerError

if TYPE_CHECKING:
    from google.protobuf.message import Message

logger = logging.getLogger(__name__)

# TF Serving calls SetMaxMessageSize(INT32_MAX) in both directions.
MAX_MESSAGE_BYTES = 2**31 - 1

T = TypeVar("T")


def _answer_counted(
    context: grpc.ServicerContext, call: Callable[[], T], metrics: Metrics | None, model: str, api: str
) -> T:
    """Answer and, when metrics are kept, count the request as TF Serving's gRPC service does."""
    if metrics is None:
        return _answer(context, call)
    start = time.perf_counter()

    def done(code: str) -> None:
        metrics.record(model, api, "GRPC", code, (time.perf_counter() - start) * 1e6)

    return _answer(context, call, done)


def _prediction_handler(core: ServingCore, metrics: Metrics | None) -> grpc.GenericRpcHandler:
    """PredictionService as a generic handler: Predict answers with bytes encoded by the core."""
    pb = protos()

    def unary(
        call: Callable[[Any], Any],
        request_cls: type[Message],
        serializer: Callable[[Any], bytes],
        api: str | None = None,
    ) -> grpc.RpcMethodHandler:
        def handle(request: Message, context: grpc.ServicerContext) -> Any:
            if api is None:
                return _answer(context, lambda: call(request))
            name = _model_name(request)
            return _answer_counted(context, lambda: call(request), metrics, name, api)

        return grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=request_cls.FromString, response_serializer=serializer
        )

    handlers = {
        # The response is already its wire bytes: serializing is the identity.
        "Predict": _predict_handler(core, metrics),
        "Classify": unary(core.classify, pb.classification_pb2.ClassificationRequest, _serialize, "Classify"),
        "Regress": unary(core.regress, pb.regression_pb2.RegressionRequest, _serialize, "Regress"),
        "MultiInference": unary(core.multi_inference, pb.inference_pb2.MultiInferenceRequest, _serialize),
        "GetModelMetadata": unary(
            core.get_model_metadata, pb.get_model_metadata_pb2.GetModelMetadataRequest, _serialize
        ),
    }
    return grpc.method_handlers_generic_handler("tensorflow.serving.PredictionService", handlers)


def _predict_handler(core: ServingCore, metrics: Metrics | None) -> grpc.RpcMethodHandler:
    """Predict: without metrics the handler calls the core and nothing between (every
    request takes this path, and each call on it costs as much as a small model's run)."""
    predict_bytes = core.predict_bytes
    parse = protos().predict_pb2.PredictRequest.FromString

    def predict(data: bytes, context: grpc.ServicerContext) -> bytes:
        # The request arrives as bytes and is parsed here, in the worker, as the floor's
        # handler takes bytes: gRPC's one polling thread, which every call passes through,
        # does no parsing. A request that does not parse ends as gRPC ends it itself.
        try:
            request = parse(data)
        except Exception:
            logger.exception("Exception deserializing message!")
            context.abort(grpc.StatusCode.INTERNAL, "Exception deserializing request!")
        if metrics is not None:
            call = functools.partial(predict_bytes, request)
            answer: bytes = _answer_counted(context, call, metrics, request.model_spec.name, "Predict")
            return answer
        try:
            return predict_bytes(request)
        except Exception as exc:
            context.abort(*_status(exc))
            raise  # not reached: abort raises

    return grpc.unary_unary_rpc_method_handler(
        predict, request_deserializer=_identity, response_serializer=_identity
    )


def _model_name(request: ClassificationRequest | RegressionRequest) -> str:
    name: str = request.model_spec.name
    return name


def _model_handler(core: ServingCore) -> grpc.GenericRpcHandler:
    """ModelService as a generic handler: model status and config reloads."""
    pb = protos()

    def status(request: GetModelStatusRequest, context: grpc.ServicerContext) -> GetModelStatusResponse:
        return _answer(context, lambda: core.get_model_status(request))

    def reload(request: ReloadConfigRequest, context: grpc.ServicerContext) -> ReloadConfigResponse:
        response, error = core.reload_config(request)
        if error is not None:
            context.abort(error.code, error.wire_message())
        return response

    handlers = {
        "GetModelStatus": grpc.unary_unary_rpc_method_handler(
            status,
            request_deserializer=pb.get_model_status_pb2.GetModelStatusRequest.FromString,
            response_serializer=_serialize,
        ),
        "HandleReloadConfigRequest": grpc.unary_unary_rpc_method_handler(
            reload,
            request_deserializer=pb.model_management_pb2.ReloadConfigRequest.FromString,
            response_serializer=_serialize,
        ),
    }
    return grpc.method_handlers_generic_handler("tensorflow.serving.ModelService", handlers)


def start_grpc(
    core: ServingCore,
    host: str,
    port: int,
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    workers: int = 64,
    busy_workers: int | None = None,
    tls: SslConfig | None = None,
    socket_path: str | None = None,
    metrics: Metrics | None = None,
    arguments: Sequence[tuple[str, Any]] = (),
    health: Health | None = None,
    open_inference: bool = False,
) -> tuple[grpc.Server, int, CallPool]:
    """Start a gRPC server with both services; returns it, the bound port (port 0 picks one)
    and the pool of its threads, to shut down after the server stops.

    Calls run on a :class:`CallPool` of ``busy_workers`` threads (default: one per
    processor), grown up to ``workers`` while calls wait on threads that are all stuck in
    long calls. ``tls`` serves TLS (mutual when it asks for client certificates);
    ``socket_path`` also listens on that unix socket (TF Serving's ``--grpc_socket_path``);
    ``metrics`` counts Predict, Classify and Regress calls as TF Serving's monitoring does;
    ``health`` serves gRPC's health service too (``--enable_grpc_healthcheck_service``).
    ``open_inference`` also serves the Open Inference Protocol's ``inference.GRPCInferenceService``.

    Raises:
        LocalServerError: when the address cannot be bound.
    """
    options = [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        # a second server on a busy port must fail, not share it silently
        ("grpc.so_reuseport", 0),
        *arguments,
    ]
    busy = min(workers, busy_workers if busy_workers is not None else processors())
    pool = CallPool(busy=busy, most=workers, name="tfship-grpc")
    server = grpc.server(pool, options=options)
    server.add_generic_rpc_handlers((_prediction_handler(core, metrics), _model_handler(core)))
    if health is not None:
        server.add_generic_rpc_handlers((health.grpc_handler(),))
    if open_inference:
        from tfship.server._v2 import V2Core
        from tfship.server._v2_grpc import v2_handler

        server.add_generic_rpc_handlers((v2_handler(V2Core(core)),))
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    bound = _bind(server, target, tls)
    if socket_path is not None:
        _bind(server, f"unix:{socket_path}", tls)
    server.start()
    return server, bound, pool


def _bind(server: grpc.Server, target: str, tls: SslConfig | None) -> int:
    try:
        if tls is None:
            bound: int = server.add_insecure_port(target)
        else:
            credentials = grpc.ssl_server_credentials(
                [(tls.server_key.encode(), tls.server_cert.encode())],
                root_certificates=tls.custom_ca.encode() or None,
                require_client_auth=tls.client_verify,
            )
            bound = server.add_secure_port(target, credentials)
    except RuntimeError as exc:
        raise LocalServerError(f"cannot bind gRPC to {target}: {exc}") from exc
    if bound == 0:
        raise LocalServerError(f"cannot bind gRPC to {target}: the address is in use or invalid")
    return bound
