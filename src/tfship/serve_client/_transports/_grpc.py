"""The gRPC transports: TF Serving's two services over one channel (``grpc`` or ``grpc.aio``).

The channel gets TF Serving's 2 GiB message limit, keepalive and quick reconnects; Predict
answers arrive as bytes so the client decodes them on the packed path instead of through
protobuf's repeated fields. Every ``grpc.RpcError`` leaves through ``rpc_errors``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tfship._wire import protos
from tfship.serve_client._errors import import_grpc, rpc_errors
from tfship.serve_client._options import Tls, TlsConfig
from tfship.serve_client._transports._base import MODEL_METHODS, Call, check_target

if TYPE_CHECKING:
    import grpc
    from google.protobuf.message import Message

__all__ = ["AsyncGrpcTransport", "GrpcTransport", "channel_options"]

MAX_MESSAGE_BYTES = 2**31 - 1
_SERVICES = {
    **{m: "/tensorflow.serving.PredictionService/" for m in ("Predict", "Classify", "Regress")},
    "MultiInference": "/tensorflow.serving.PredictionService/",
    "GetModelMetadata": "/tensorflow.serving.PredictionService/",
    **{m: "/tensorflow.serving.ModelService/" for m in MODEL_METHODS},
}
# Method -> response class under protos(); Predict stays bytes for the packed decoder.
_RESPONSES: dict[str, str | None] = {
    "Predict": None,
    "Classify": "classification_pb2.ClassificationResponse",
    "Regress": "regression_pb2.RegressionResponse",
    "MultiInference": "inference_pb2.MultiInferenceResponse",
    "GetModelMetadata": "get_model_metadata_pb2.GetModelMetadataResponse",
    "GetModelStatus": "get_model_status_pb2.GetModelStatusResponse",
    "HandleReloadConfigRequest": "model_management_pb2.ReloadConfigResponse",
}


def channel_options(
    max_message_bytes: int, keepalive: float | None, extra: Sequence[tuple[str, Any]]
) -> list[tuple[str, Any]]:
    """gRPC channel options: TF Serving's 2 GiB message limit, keepalive, quick reconnects;
    ``extra`` options win over ours."""
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


def tls_credentials(tls: Tls) -> tuple[grpc.ChannelCredentials | None, list[tuple[str, Any]]]:
    """(channel credentials or None, extra options) for ``tls=`` (bool, TlsConfig, credentials)."""
    grpc = import_grpc()

    if tls is None or tls is False:
        return None, []
    if tls is True:
        return grpc.ssl_channel_credentials(), []
    if isinstance(tls, TlsConfig):
        extra = []
        if tls.server_name:
            extra.append(("grpc.ssl_target_name_override", tls.server_name))
        return tls.credentials(), extra
    if isinstance(tls, grpc.ChannelCredentials):
        return tls, []
    raise TypeError(f"tls must be a bool, TlsConfig or grpc.ChannelCredentials, got {tls!r}")


def _serialize(message: Message) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _identity(data: bytes) -> bytes:
    return data


def _parser(method: str) -> Callable[[bytes], Any]:
    path = _RESPONSES[method]
    if path is None:
        return _identity
    module, cls = path.split(".")
    parser: Callable[[bytes], Any] = getattr(getattr(protos(), module), cls).FromString
    return parser


class _GrpcBase:
    """What both gRPC transports keep: the target, the channel options, headers, the stubs.

    Args:
        target: ``host:port`` or ``unix:PATH``.
        tls: ``True`` (system roots), a :class:`TlsConfig` or ``grpc.ChannelCredentials``.
        max_message_bytes: send/receive limit (TF Serving's is 2 GiB).
        options: extra channel options, which win over ours.
        headers: call metadata sent with every call.
        keepalive: seconds between keepalive pings (``None``: off).
    """

    needs_signature = False
    takes_arrays = False

    def __init__(
        self,
        target: str,
        *,
        tls: Tls = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        options: Sequence[tuple[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
        keepalive: float | None = 60.0,
    ) -> None:
        check_target(target)
        grpc_module = self._grpc_module()
        self.target = target
        creds, tls_options = tls_credentials(tls)
        self.channel_options = channel_options(max_message_bytes, keepalive, [*tls_options, *options])
        # gRPC wants lower-case metadata keys.
        self.headers = tuple((k.lower(), v) for k, v in (headers or {}).items()) or None
        if creds is None:
            self._channel = grpc_module.insecure_channel(target, options=self.channel_options)
        else:
            self._channel = grpc_module.secure_channel(target, creds, options=self.channel_options)
        self._stubs: dict[str, Any] = {}
        self._closed = False
        self._pid = os.getpid()

    @staticmethod
    def _grpc_module() -> ModuleType:
        return import_grpc()

    def _stub(self, method: str) -> grpc.UnaryUnaryMultiCallable:
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._channel.unary_unary(
                _SERVICES[method] + method,
                request_serializer=_serialize,
                response_deserializer=_parser(method),
            )
            self._stubs[method] = stub
        return stub

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target!r})"


class GrpcTransport(_GrpcBase):
    """TF Serving's gRPC API over a ``grpc`` channel, for :class:`ServingClient`.

    A channel does not survive ``fork()``: a call from another process than the one that made
    the transport raises ``RuntimeError`` instead of hanging.

    Example:
        >>> from tfship.serve_client import ServingClient
        >>> client = ServingClient(transport=GrpcTransport("127.0.0.1:8500"))
        >>> client.close()
    """

    def send(self, call: Call, timeout: float | None) -> Any:
        """Send one call; gRPC failures leave as ``ServingCallError`` subclasses."""
        if os.getpid() != self._pid:
            raise RuntimeError(
                f"this client was created in process {self._pid}; gRPC channels do not "
                "survive fork(): create a new client in each worker process"
            )
        stub = self._stub(call.method)
        with rpc_errors(**call.context):
            return stub(call.request, timeout=timeout, metadata=self.headers)

    def close(self) -> None:
        """Close the channel; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            self._channel.close()


class AsyncGrpcTransport(_GrpcBase):
    """TF Serving's gRPC API over a ``grpc.aio`` channel, for :class:`AsyncServingClient`.

    Create it inside the event loop that will use it; options as :class:`GrpcTransport`.
    """

    @staticmethod
    def _grpc_module() -> ModuleType:
        import_grpc()
        import grpc.aio

        module: ModuleType = grpc.aio  # the package is untyped
        return module

    async def send(self, call: Call, timeout: float | None) -> Any:
        """Send one call; gRPC failures leave as ``ServingCallError`` subclasses."""
        stub = self._stub(call.method)
        with rpc_errors(**call.context):
            return await stub(call.request, timeout=timeout, metadata=self.headers)

    async def aclose(self) -> None:
        """Close the channel; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            await self._channel.close()
