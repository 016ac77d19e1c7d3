"""Whether the server is ready, asked three ways: gRPC's standard health service
(``grpc.health.v1.Health``, behind ``--enable_grpc_healthcheck_service``), a readiness and a
liveness URL on the REST port, and the list of served models (``GET /v1/models``).

The gRPC service answers for these names (TF Serving 2.15 and later set the first three):

* ``""`` (the whole server) and ``PredictionService``: SERVING once every model of the
  configuration has a version AVAILABLE, NOT_SERVING before (a version still loading, a base
  path without versions yet), when a model loses its last version, and from the moment the
  server starts shutting down. A model a reload adds counts once it has had a version, so that
  a reload never takes the server out of a load balancer's rotation while it loads;
* ``ModelService``: SERVING until shutdown (it answers whatever the models' states);
* the same two services by their full names (``tensorflow.serving.PredictionService``, ...),
  and each configured model by its name, SERVING while it has an AVAILABLE version: both
  extensions of tfship's. A model named like one of the services is reached through the
  service's meaning, not its own.

Any other name is unknown: Check fails with NOT_FOUND and Watch answers SERVICE_UNKNOWN, as the
standard says, and Watch follows the name if a reload adds a model of that name. Watch holds no
thread of its own: it answers through gRPC's non-blocking streaming, and one thread, started by
the first Watch, follows the models' state changes for every open Watch.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import TYPE_CHECKING, Any

import grpc

from tfship._wire import protos

if TYPE_CHECKING:
    from collections.abc import Callable

    from google.protobuf.message import Message

    from tfship.server._core import ServingCore

READY_PATH = "/v1/health/ready"  # 200 when ready, 503 otherwise (tfship's, not TF Serving's)
LIVE_PATH = "/v1/health/live"  # 200 while the server answers
MODELS_PATH = "/v1/models"  # the served models and their versions' states

WHOLE_SERVER = ("", "PredictionService", "tensorflow.serving.PredictionService")
MODEL_SERVICE = ("ModelService", "tensorflow.serving.ModelService")
_WAIT_S = 1.0  # the longest the follower sleeps between looks at cancelled calls


class Health:
    """Serving statuses by health service name, read from the model manager's states."""

    def __init__(self, core: ServingCore) -> None:
        self._core = core
        self._manager = core.manager
        # made once the manager loaded the first versions: the models the server starts with
        self._initial = frozenset(core.manager.served_models())
        self._lock = threading.Lock()  # guards _watches and _follower
        self._watches: list[_Watch] = []
        self._follower: threading.Thread | None = None
        self._added = False  # a Watch joined since the follower last looked
        self.closing = False

    # statuses ------------------------------------------------------------------------------
    def ready(self) -> bool:
        """Every model of the configuration has an AVAILABLE version, and no shutdown began.

        A model a reload added counts once it has had a version: until then it is NOT_SERVING
        under its own name, and the models already serving keep the server ready.
        """
        if self.closing:
            return False
        manager = self._manager
        return all(
            manager.available_versions(name)
            for name in manager.served_models()
            if name in self._initial or any(e.state == "AVAILABLE" for e in manager.history(name))
        )

    def status(self, service: str) -> int | None:
        """The ``ServingStatus`` number of ``service`` now, or None for a name not known."""
        if service in MODEL_SERVICE:
            serving = not self.closing
        elif service in WHOLE_SERVER:
            serving = self.ready()
        elif service in self._manager.served_models():
            serving = not self.closing and bool(self._manager.available_versions(service))
        else:
            return None
        response = protos().health_pb2.HealthCheckResponse
        status: int = response.SERVING if serving else response.NOT_SERVING
        return status

    def shut_down(self) -> None:
        """From now on every name is NOT_SERVING: tell each Watch, then end it (UNAVAILABLE),
        so that stopping the gRPC server waits for no open Watch."""
        self.closing = True
        with self._lock:
            watches, self._watches = self._watches, []
        for watch in watches:
            watch.end()
        self._manager.wake()

    # gRPC ----------------------------------------------------------------------------------
    def grpc_handler(self) -> grpc.GenericRpcHandler:
        """``grpc.health.v1.Health`` as a generic handler on tfship's message classes."""
        health_pb2 = protos().health_pb2

        def check(request: Any, context: grpc.ServicerContext) -> Any:  # grpc.health.v1's messages
            status = self.status(request.service)
            if status is None:
                context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
            return health_pb2.HealthCheckResponse(status=status)

        def watch(request: Any, context: grpc.ServicerContext, send: Callable[[Any], None]) -> None:
            self._watch(_Watch(self, request.service, context, send))

        watch.experimental_non_blocking = True  # type: ignore[attr-defined]
        handlers = {
            "Check": grpc.unary_unary_rpc_method_handler(
                check,
                request_deserializer=health_pb2.HealthCheckRequest.FromString,
                response_serializer=_serialize,
            ),
            "Watch": grpc.unary_stream_rpc_method_handler(
                watch,
                request_deserializer=health_pb2.HealthCheckRequest.FromString,
                response_serializer=_serialize,
            ),
        }
        return grpc.method_handlers_generic_handler("grpc.health.v1.Health", handlers)

    def _watch(self, watch: _Watch) -> None:
        watch.update()  # the status now, first
        if self.closing:
            watch.end()
            return
        with self._lock:
            self._watches.append(watch)
            self._added = True
            if self._follower is None:
                self._follower = threading.Thread(target=self._follow, name="tfship-health", daemon=True)
                self._follower.start()
        watch.context.add_callback(lambda: self._forget(watch))
        self._manager.wake()
        if self.closing:  # shut_down() ran meanwhile and may not have seen this one
            self._forget(watch)
            watch.end()

    def _forget(self, watch: _Watch) -> None:
        with self._lock:
            if watch in self._watches:
                self._watches.remove(watch)

    def _follow(self) -> None:
        """Send each open Watch its service's status whenever it changes."""
        while not self.closing:
            with self._lock:
                watches = list(self._watches)
                self._added = False
            for watch in watches:
                watch.update()
            seen = {watch.service: watch.last for watch in watches}
            self._manager.wait_for(functools.partial(self._changed, seen), _WAIT_S)

    def _changed(self, seen: dict[str, int | None]) -> bool:
        """Whether the follower has anything to send (called under the manager's lock)."""
        if self.closing or self._added:
            return True
        unknown = protos().health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
        return any((self.status(service) or unknown) != last for service, last in seen.items())

    # REST ----------------------------------------------------------------------------------
    def rest(self, method: str, path: str) -> tuple[int, bytes] | None:
        """The answer to a GET of one of the health or model list URLs; None for any other."""
        if method not in ("GET", "HEAD"):
            return None
        if path == READY_PATH:
            ready = self.ready()
            models = {name: _status_name(self.status(name)) for name in self._manager.served_models()}
            body = {"status": "SERVING" if ready else "NOT_SERVING", "models": models}
            return (200 if ready else 503), _json(body)
        if path == LIVE_PATH:
            return 200, _json({"status": "SERVING"})
        if path == MODELS_PATH:
            return 200, _json({"models": [self._model_entry(name) for name in self._manager.served_models()]})
        return None

    def _model_entry(self, name: str) -> dict[str, Any]:
        """One model as GET /v1/models/<name> shows it, with its name and whether it serves."""
        from google.protobuf import json_format

        from tfship._wire import unset_fields_printed
        from tfship.server._status import RpcError

        request = protos().get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = name
        try:
            response = self._core.get_model_status(request)
        except RpcError:  # no version found yet
            versions: list[Any] = []
        else:
            printed = json_format.MessageToDict(
                response, preserving_proto_field_name=True, **unset_fields_printed()
            )
            versions = printed["model_version_status"]
        return {
            "name": name,
            "ready": bool(self._manager.available_versions(name)),
            "model_version_status": versions,
        }


class _Watch:
    """One open Watch call: its service, the last status sent, and how to send."""

    def __init__(
        self, health: Health, service: str, context: grpc.ServicerContext, send: Callable[[Any], None]
    ) -> None:
        self.health, self.service, self.context, self._send = health, service, context, send
        self.last: int | None = None  # the ServingStatus number sent last
        self._lock = threading.Lock()  # one send at a time, each the newest status
        self._ended = False

    def update(self) -> None:
        """Send the status now when it differs from the last one sent."""
        with self._lock:
            if self._ended:
                return
            response = protos().health_pb2.HealthCheckResponse
            status = self.health.status(self.service)
            status = response.SERVICE_UNKNOWN if status is None else status
            if status != self.last:
                self.last = status
                self._send(response(status=status))

    def end(self) -> None:
        """Send NOT_SERVING (unless sent last), then end the call with UNAVAILABLE."""
        self.update()
        with self._lock:
            if self._ended:
                return
            self._ended = True
            self.context.set_code(grpc.StatusCode.UNAVAILABLE)
            self.context.set_details("the server is shutting down")
            self._send(None)


def _serialize(message: Message) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _status_name(status: int | None) -> str:
    name: str = protos().health_pb2.HealthCheckResponse.ServingStatus.Name(status or 0)
    return name


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode("utf-8")
