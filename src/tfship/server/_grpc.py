"""The gRPC face of the local server: TF Serving's two services on the official stubs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from tfship.server._config import TlsConfig
from tfship.server._core import ServingCore
from tfship.server._status import LocalServerError, RpcError

logger = logging.getLogger(__name__)

# TF Serving calls SetMaxMessageSize(INT32_MAX) in both directions.
MAX_MESSAGE_BYTES = 2**31 - 1


def _answer(context: Any, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except RpcError as exc:
        context.abort(exc.code, exc.wire_message())
    except MemoryError:
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "out of memory serving this request")
    except Exception as exc:  # a bug must become INTERNAL, never a dropped connection
        logger.exception("unexpected error while serving a request")
        context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}"[:1024])


def _servicers(core: ServingCore) -> tuple[Any, Any]:
    from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

    class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):  # type: ignore[misc]
        def Classify(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC names
            return _answer(context, lambda: core.classify(request))

        def Regress(self, request: Any, context: Any) -> Any:  # noqa: N802
            return _answer(context, lambda: core.regress(request))

        def Predict(self, request: Any, context: Any) -> Any:  # noqa: N802
            return _answer(context, lambda: core.predict(request))

        def MultiInference(self, request: Any, context: Any) -> Any:  # noqa: N802
            return _answer(context, lambda: core.multi_inference(request))

        def GetModelMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
            return _answer(context, lambda: core.get_model_metadata(request))

    class ModelService(model_service_pb2_grpc.ModelServiceServicer):  # type: ignore[misc]
        def GetModelStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
            return _answer(context, lambda: core.get_model_status(request))

        def HandleReloadConfigRequest(self, request: Any, context: Any) -> Any:  # noqa: N802
            response, error = core.reload_config(request)
            if error is not None:
                context.abort(error.code, error.wire_message())
            return response

    return PredictionService(), ModelService()


def start_grpc(
    core: ServingCore,
    host: str,
    port: int,
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    workers: int = 64,
    tls: TlsConfig | None = None,
    socket_path: str | None = None,
) -> tuple[Any, int]:
    """Start a gRPC server with both services; returns it and the bound port (port 0 picks one).

    ``tls`` serves TLS (mutual when it asks for client certificates); ``socket_path`` also
    listens on that unix socket (TF Serving's ``--grpc_socket_path``).

    Raises:
        LocalServerError: when the address cannot be bound.
    """
    from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

    options = [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        # a second server on a busy port must fail, not share it silently
        ("grpc.so_reuseport", 0),
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tfship-grpc"),
        options=options,
    )
    prediction, model = _servicers(core)
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(prediction, server)
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(model, server)
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    bound = _bind(server, target, tls)
    if socket_path is not None:
        _bind(server, f"unix:{socket_path}", tls)
    server.start()
    return server, bound


def _bind(server: Any, target: str, tls: TlsConfig | None) -> int:
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
