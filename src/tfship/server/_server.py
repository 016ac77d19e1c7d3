"""``ModelServer``: a local server that answers like TensorFlow Serving, embeddable in Python."""

from __future__ import annotations

import errno
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from tfship.server._config import ModelConfig, SslConfig, single_model
from tfship.server._manager import ModelManager, Servable, StateEvent, version_paths
from tfship.server._request_log import RequestLog, RequestLogOptions
from tfship.server._status import LocalServerError, ServerConfigError

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    import grpc

    from tfship.server._core import ServingCore
    from tfship.server._health import Health
    from tfship.server._metrics import Metrics
    from tfship.server._pool import CallPool

logger = logging.getLogger(__name__)

# ``Self`` on Python 3.9 without typing_extensions: a subclass's start() and with keep its type
_Server = TypeVar("_Server", bound="ModelServer")


@dataclass(frozen=True)
class BatchingOptions:
    """Server-side batching of Predict (TF Serving's ``--enable_batching``).

    Concurrent Predict calls to the same version and signature are merged along dimension 0
    into one run of at most ``max_batch_size`` rows, waiting at most ``batch_timeout_s`` for
    companions.

    Example:
        >>> BatchingOptions(max_batch_size=64, batch_timeout_s=0.002).max_batch_size
        64
    """

    max_batch_size: int = 32
    batch_timeout_s: float = 0.001


@dataclass(frozen=True)
class ServerOptions:
    """How a :class:`ModelServer` listens, loads and answers: TF Serving's flags as one value.

    Attributes:
        host: address to bind (loopback unless told otherwise).
        port: gRPC port; 0 picks a free one.
        rest_port: REST port (off when None); 0 picks a free one.
        poll_seconds: how often base paths are scanned (``--file_system_poll_wait_seconds``).
        batching: merge concurrent Predict calls (``--enable_batching``), or None.
        warmup: replay ``assets.extra/tf_serving_warmup_requests`` when a version loads.
        method_name_check: ``--enable_signature_method_name_check``.
        allow_version_labels_for_unavailable_models: TF Serving's flag of that name.
        max_message_bytes: gRPC message limit both ways (TF Serving: INT32_MAX).
        grpc_workers: the most threads answering gRPC calls at once (``--grpc_max_threads``).
        grpc_busy_workers: threads kept answering gRPC calls; more are added, up to
            ``grpc_workers``, only while calls wait and every thread is stuck in a long call
            (None: one per processor; with batching, all ``grpc_workers``).
        max_load_retries: retries of a failed load (``--max_num_load_retries``, TF Serving's
            5): a version copied in non-atomically fails once and loads on a retry.
        load_retry_interval_s: pause between load retries (``--load_retry_interval_micros``,
            TF Serving's 60 s); the version stays LOADING meanwhile.
        tls: serve gRPC over TLS, a :class:`SslConfig` (``--ssl_config_file``).
        grpc_socket_path: also serve gRPC on this unix socket.
        grpc_arguments: extra gRPC server arguments (``--grpc_channel_arguments``).
        model_config_file: the file ``models`` came from (:func:`read_config_file`), re-read
            every ``model_config_poll_seconds`` when that is above 0.
        model_config_poll_seconds: ``--model_config_file_poll_wait_seconds``.
        rest_timeout_s: longest REST model run (``--rest_api_timeout_in_ms``); None: no limit.
        rest_max_connections: the most REST connections open at once; past it a new one is
            answered 503 and closed at once. None: 1024, or half the open-file limit when
            that is lower, so that idle clients cannot use up the descriptors that polling
            and loading need.
        rest_max_inflated_bytes: the size a gzip REST body may inflate to (TF Serving's
            100 MiB); past it the request is answered 400.
        open_inference: also serve the Open Inference Protocol (KServe V2): ``/v2`` on the
            REST port and ``inference.GRPCInferenceService`` on the gRPC port.
        prometheus_path: serve Prometheus metrics on the REST port at this path (from a
            ``--monitoring_config_file``), or None.
        grpc_health: serve gRPC's health service, ``grpc.health.v1.Health``
            (``--enable_grpc_healthcheck_service``); SERVING once every model has a version
            available. The REST port answers ``/v1/health/ready`` and ``/v1/models`` either way.
        load_wait_timeout_s: how long :meth:`ModelServer.start` waits for every model's first
            version (TF Serving 2.17's ``ServerCore::Options::servable_state_waiter_timeout``;
            no flag). Past it, start fails naming the models still waiting, and their loads
            are stopped. None waits as long as the loads take, as ``tfship serve`` and TF
            Serving's binary do.
        should_retry_load: decides, from a failed load's status code and message, whether
            it is retried (TF Serving 2.18's ``ServerCore::Options::should_retry_model_load``;
            no flag): False ends the version's load at once, as for an error no retry can
            mend. None retries every failure, as ``tfship serve`` and TF Serving's binary do.
        tensor_content: gRPC Predict answers carry each output's values as
            ``tensor_content`` bytes (TF Serving 2.19+'s
            ``--enable_serialization_as_tensor_content``), not typed fields.
        request_log: how the models' ``logging_config`` request logs are written (file
            size, queue, this task's data centre and index).

    Example:
        >>> ServerOptions(port=0, rest_port=0).rest_timeout_s
        30.0
    """

    host: str = "127.0.0.1"
    port: int = 8500
    rest_port: int | None = None
    poll_seconds: float = 1.0
    batching: BatchingOptions | None = None
    warmup: bool = True
    method_name_check: bool = False
    allow_version_labels_for_unavailable_models: bool = False
    max_message_bytes: int = 2**31 - 1
    grpc_workers: int = 64
    grpc_busy_workers: int | None = None
    max_load_retries: int = 5
    load_retry_interval_s: float = 60.0
    tls: SslConfig | None = None
    grpc_socket_path: str | os.PathLike[str] | None = None
    grpc_arguments: tuple[tuple[str, int | str], ...] = ()
    model_config_file: str | os.PathLike[str] | None = None
    model_config_poll_seconds: float = 0.0
    rest_timeout_s: float | None = 30.0
    rest_max_connections: int | None = None
    rest_max_inflated_bytes: int = 100 << 20
    prometheus_path: str | None = None
    grpc_health: bool = False
    tensor_content: bool = False
    should_retry_load: Callable[[grpc.StatusCode, str], bool] | None = None
    load_wait_timeout_s: float | None = None
    request_log: RequestLogOptions = RequestLogOptions()
    open_inference: bool = True


class ModelServer:
    """Serve SavedModels over TF Serving's gRPC API (and its REST API when asked).

    Start it, wait until a model is available, call it with any TF Serving client, stop it.
    Port 0 picks a free port; the chosen ports are in ``port`` and ``rest_port``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> import grpc
        >>> options = ServerOptions(port=0, rest_port=0)
        >>> with ModelServer.from_base_path("m", "m", options=options) as server:
        ...     with grpc.insecure_channel(server.address) as channel:
        ...         grpc.channel_ready_future(channel).result(timeout=10)
    """

    def __init__(self, models: Sequence[ModelConfig], options: ServerOptions | None = None) -> None:
        options = options or ServerOptions()
        if options.rest_port is not None and options.rest_port == options.port and options.port:
            raise ServerConfigError(
                f"the REST port {options.rest_port} must differ from the gRPC port {options.port}"
            )
        self.models = list(models)
        self.options = options
        self.host = options.host
        self.port: int | None = None
        self.rest_port: int | None = None
        self.batching = options.batching
        self.tls = options.tls
        socket = options.grpc_socket_path
        self.grpc_socket_path = None if socket is None else str(socket)
        self.metrics: Metrics | None = None
        self.request_log: RequestLog | None = None
        self._watcher: threading.Thread | None = None
        self._grpc: grpc.Server | None = None
        self._grpc_pool: CallPool | None = None
        self._rest: ThreadingHTTPServer | None = None
        self._manager: ModelManager | None = None
        self._core: ServingCore | None = None
        self._health: Health | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    @property
    def core(self) -> ServingCore | None:
        """The serving core that answers every API (``None`` until started); the in-process
        client transport calls it without a socket."""
        return self._core

    @classmethod
    def from_base_path(
        cls,
        base_path: str | os.PathLike[str],
        model_name: str = "default",
        version_policy: str = "latest",
        options: ServerOptions | None = None,
    ) -> ModelServer:
        """Serve one model from a base path of numeric versions (``--model_base_path``)."""
        return cls([single_model(model_name, base_path, version_policy)], options)

    # lifecycle -------------------------------------------------------------------------------
    def start(self: _Server) -> _Server:
        """Load the models' initial versions, then open the ports. Returns ``self``.

        Raises:
            ServerConfigError: a base path does not exist.
            LocalServerError: a port cannot be bound, or a label names an unavailable version.
        """
        from tfship.server._core import ServingCore
        from tfship.server._grpc import start_grpc
        from tfship.server._health import Health
        from tfship.server._status import RpcError

        for model in self.models:
            try:
                found = version_paths(model.base_path, model.name)
            except OSError as exc:
                raise LocalServerError(
                    f"Could not list base path {model.base_path} for servable {model.name}: "
                    f"{exc.strerror or exc}"
                ) from None
            if found is None:
                raise ServerConfigError(
                    f"Could not find base path {model.base_path} for servable {model.name}"
                )
        options = self.options
        # a port in use is the user's to fix: say so before loading anything
        if self.grpc_socket_path is None:
            _check_port_free(self.host, options.port, "gRPC")
        if options.rest_port is not None:
            _check_port_free(self.host, options.rest_port, "REST")
        if options.prometheus_path is not None:
            from tfship.server._metrics import Metrics

            self.metrics = Metrics(options.prometheus_path)
        self.request_log = self._start_request_log()
        self._manager = ModelManager(
            self.models,
            poll_seconds=options.poll_seconds,
            warmup=self._run_warmup if options.warmup else None,
            allow_labels_for_unavailable=options.allow_version_labels_for_unavailable_models,
            on_load=self._attach_batcher if self.batching else None,
            max_load_retries=options.max_load_retries,
            load_retry_interval_s=options.load_retry_interval_s,
            on_poll_error=None if self.metrics is None else self.metrics.count_poll_error,
            should_retry_load=options.should_retry_load,
        )
        self._core = ServingCore(
            self._manager,
            method_name_check=options.method_name_check,
            metrics=self.metrics,
            tensor_content=options.tensor_content,
            request_log=self.request_log,
        )
        try:
            self._load_first_versions(self._manager, options.load_wait_timeout_s)
        except RpcError as exc:
            self._manager.stop()
            raise LocalServerError(exc.message) from exc
        failed = self._manager.failed_models()
        if failed:
            # TF Serving refuses to start when a model's first versions fail to load.
            self._manager.stop()
            raise LocalServerError(_unavailable_message(failed))
        self._health = Health(self._core)
        try:
            self._grpc, self.port, self._grpc_pool = start_grpc(
                self._core,
                self.host,
                options.port,
                max_message_bytes=options.max_message_bytes,
                workers=options.grpc_workers,
                # a batch forms from calls waiting together: each needs a thread of its own
                busy_workers=options.grpc_workers if self.batching else options.grpc_busy_workers,
                tls=self.tls,
                socket_path=self.grpc_socket_path,
                metrics=self.metrics,
                arguments=options.grpc_arguments,
                health=self._health if options.grpc_health else None,
                open_inference=options.open_inference,
            )
            if options.rest_port is not None:
                from tfship.server._rest import start_rest

                self._rest, self.rest_port = start_rest(
                    self._core,
                    self.host,
                    options.rest_port,
                    timeout_s=options.rest_timeout_s,
                    max_connections=options.rest_max_connections,
                    max_inflated=options.rest_max_inflated_bytes,
                    health=self._health,
                    open_inference=options.open_inference,
                )
        except BaseException:
            self.stop()
            raise
        if options.model_config_file is not None and options.model_config_poll_seconds > 0:
            self._watcher = threading.Thread(target=self._watch_config, name="tfship-config", daemon=True)
            self._watcher.start()
        logger.info("serving gRPC on %s", self.address)
        if self.rest_port is not None:
            logger.info("serving REST on %s", self.rest_url)
        return self

    def _load_first_versions(self, manager: ModelManager, timeout: float | None) -> None:
        """``manager.start()``, waited for at most ``timeout`` seconds (None: as long as it takes).

        Past the timeout the manager is told to stop; a load under way cannot be interrupted,
        so the unloading finishes in the background once it returns.
        """
        if timeout is None:
            manager.start()
            return
        raised: list[BaseException] = []

        def load() -> None:
            try:
                manager.start()
            except BaseException as exc:  # handed to the waiting thread
                raised.append(exc)

        loader = threading.Thread(target=load, name="tfship-first-load", daemon=True)
        loader.start()
        loader.join(timeout)
        if loader.is_alive():
            waiting = _not_yet_available(manager, [m.name for m in self.models])
            threading.Thread(target=manager.stop, name="tfship-stop-loads", daemon=True).start()
            raise LocalServerError(
                f"{len(waiting)} model(s) did not become available: {{{''.join(waiting)}}} "
                f"(waited {timeout:g} s)"
            )
        if raised:
            raise raised[0]

    def _watch_config(self) -> None:
        """Re-read the model config file when it changes (--model_config_file_poll_wait_seconds)."""
        from tfship.server._config import read_config_file

        assert self.options.model_config_file is not None
        path = str(self.options.model_config_file)
        seen = _mtime(path)
        while not self._stopped.wait(self.options.model_config_poll_seconds):
            current = _mtime(path)
            if current == seen:
                continue
            seen = current
            try:
                self.reload(read_config_file(path))
                logger.info("reloaded model config from %s", path)
            except (ServerConfigError, LocalServerError) as exc:
                logger.error("model config %s not applied: %s", path, exc)

    def _start_request_log(self) -> RequestLog:
        """The loggers of the models' ``logging_config``; a prefix that cannot be written is
        a ``ServerConfigError`` before anything loads."""
        from tfship.server._config import logging_by_model

        request_log = RequestLog(self.options.request_log)
        request_log.configure(logging_by_model(self.models))
        if self.metrics is not None:
            self.metrics.request_log_counts = request_log.counts
        return request_log

    def _run_warmup(self, servable: Servable) -> None:
        from tfship.server._warmup import run_warmup

        assert self._core is not None  # versions load after start() made the core
        run_warmup(self._core, servable)

    def _attach_batcher(self, servable: Servable) -> None:
        from tfship.server._batching import Batcher

        assert self.batching is not None
        servable.batcher = Batcher(self.batching.max_batch_size, self.batching.batch_timeout_s)

    def stop(self, grace: float | None = 5.0) -> None:
        """Stop accepting calls, finish those in flight (up to ``grace`` s), unload the models.

        Idempotent.
        """
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        if self._manager is None:
            return  # never started: nothing to stop, nothing to report
        if self._health is not None:  # NOT_SERVING before any listener closes
            self._health.shut_down()
        if self._rest is not None:
            self._rest.shutdown()
            self._rest.server_close()
        if self._watcher is not None:
            self._watcher.join(timeout=30)
        if self._grpc is not None:
            self._grpc.stop(grace).wait()
        if self._grpc_pool is not None:
            self._grpc_pool.shutdown(wait=False)
        if self.request_log is not None:  # after the last answer: its record is written
            self.request_log.close()
        if self._manager is not None:
            self._manager.stop()
        logger.info("server stopped")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``stop()`` is called (by a signal handler, say); True once stopped."""
        return self._stopped.wait(timeout)

    def __enter__(self: _Server) -> _Server:
        return self.start() if self._manager is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # addresses -------------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """``host:port`` of the gRPC API, for ``grpc.insecure_channel``."""
        self._require_started()
        return f"{self.host}:{self.port}"

    @property
    def rest_url(self) -> str | None:
        """``http://host:port`` of the REST API, or None when REST is off."""
        if self.rest_port is None:
            return None
        return f"http://{self.host}:{self.rest_port}"

    def _require_started(self) -> ModelManager:
        if self._manager is None:
            raise LocalServerError("the server is not started; call start() first")
        return self._manager

    # models ----------------------------------------------------------------------------------
    def wait_until_available(
        self, model_name: str | None = None, version: int | None = None, timeout: float = 60.0
    ) -> int:
        """Block until ``model_name`` (the only model when None) serves ``version`` (any when
        None). Returns the newest available version.

        Raises:
            LocalServerError: not available within ``timeout`` seconds; says what state it is in.
        """
        manager = self._require_started()
        name = model_name or self._only_model()

        def ready() -> bool:
            versions = manager.available_versions(name)
            return bool(versions) and (version is None or version in versions)

        if not manager.wait_for(ready, timeout):
            raise LocalServerError(
                f"model {name!r} version {version if version is not None else '(any)'} did not "
                f"become available within {timeout:g} s; states: {self._describe(name)}"
            )
        return max(manager.available_versions(name))

    def _only_model(self) -> str:
        names = [m.name for m in self.models]
        if len(names) != 1:
            raise ValueError(f"several models are served ({', '.join(names)}); name one")
        return names[0]

    def _describe(self, name: str) -> str:
        manager = self._require_started()
        try:
            events = manager.status(name, None)
        except Exception:
            return "(none)"
        return ", ".join(
            f"{e.version}: {e.state}" + (f" ({e.error.message})" if e.error else "") for e in events
        )

    def available_versions(self, model_name: str | None = None) -> list[int]:
        """Versions of the model that serve requests now, ascending."""
        return self._require_started().available_versions(model_name or self._only_model())

    def history(self, model_name: str | None = None) -> list[StateEvent]:
        """Every state each version went through, oldest first (START ... END)."""
        return self._require_started().history(model_name or self._only_model())

    def reload(self, models: Sequence[ModelConfig]) -> None:
        """Serve exactly ``models`` from now on (like HandleReloadConfigRequest)."""
        from tfship.server._status import RpcError

        try:
            self._require_started().apply_config(models)
        except RpcError as exc:
            raise LocalServerError(exc.message) from exc
        self.models = list(models)
        if self.request_log is not None:  # as TF Serving, after the models: a bad prefix fails the reload
            from tfship.server._config import logging_by_model

            self.request_log.configure(logging_by_model(models))

    def describe(self) -> dict[str, Any]:
        """Ports and models, as ``tfship serve --json`` prints them."""
        manager = self._require_started()
        return {
            "grpc": self.address,
            "grpc_socket": None if self.grpc_socket_path is None else f"unix:{self.grpc_socket_path}",
            "tls": self.tls is not None,
            "rest": self.rest_url,
            "models": [
                {
                    "name": m.name,
                    "base_path": m.base_path,
                    "version_policy": str(m.policy),
                    "labels": dict(m.labels),
                    "available_versions": manager.available_versions(m.name),
                }
                for m in self.models
            ],
        }


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime_ns / 1e9
    except OSError:
        return None


def _not_yet_available(manager: ModelManager, names: Sequence[str]) -> list[str]:
    """ServerCore's ``{name: m version: 1}, `` for each model with no AVAILABLE version, by
    the state its newest version reached (with its error, when it has one)."""
    parts = []
    for name in names:
        latest: dict[int, StateEvent] = {}
        for event in manager.history(name):
            latest[event.version] = event
        if any(event.state == "AVAILABLE" for event in latest.values()):
            continue
        newest = latest[max(latest)] if latest else None
        version = "" if newest is None else f" version: {newest.version}"
        error = "" if newest is None or newest.error is None else f" due to error: {newest.error.message}"
        parts.append(f"{{name: {name}{version}}}{error}, ")
    return parts


def _unavailable_message(failed: Sequence[StateEvent]) -> str:
    # ServerCore's text: "N servable(s) did not become available: {{{name: m version: 1} due
    # to error: CODE: message}, }"
    parts = "".join(
        f"{{{{name: {e.model} version: {e.version}}} due to error: "
        f"{e.error.code.name if e.error else 'UNKNOWN'}: {e.error.message if e.error else ''}}}, "
        for e in failed
    )
    return f"{len(failed)} servable(s) did not become available: {{{parts}}}"


def _check_port_free(host: str, port: int, api: str) -> None:
    """``ServerConfigError`` when ``port`` is taken (0, any free port, always is free)."""
    if port == 0:
        return
    try:
        probe = socket.create_server((host, port))  # SO_REUSEADDR, as the servers bind
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ServerConfigError(f"{api} port {host}:{port} is already in use") from None
        return  # anything else is the server's own bind to report
    probe.close()
