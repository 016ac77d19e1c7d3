"""``ModelServer``: a local server that answers like TensorFlow Serving, embeddable in Python."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from tfship.server._config import ModelConfig, TlsConfig, single_model
from tfship.server._manager import ModelManager, Servable, StateEvent
from tfship.server._status import LocalServerError, ServerConfigError

logger = logging.getLogger(__name__)


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


class ModelServer:
    """Serve SavedModels over TF Serving's gRPC API (and its REST API when asked).

    Start it, wait until a model is available, call it with any TF Serving client, stop it.
    Port 0 picks a free port; the chosen ports are in ``port`` and ``rest_port``.

    Example:
        >>> with ModelServer(model_base_path="export/penguins", model_name="penguins",
        ...                  port=0, rest_port=0) as server:  # doctest: +SKIP
        ...     channel = grpc.insecure_channel(server.address)
        ...     print(server.port, server.rest_url)
    """

    def __init__(
        self,
        models: Sequence[ModelConfig] | None = None,
        *,
        model_base_path: str | os.PathLike[str] | None = None,
        model_name: str = "default",
        version_policy: str = "latest",
        host: str = "127.0.0.1",
        port: int = 8500,
        rest_port: int | None = None,
        poll_seconds: float = 1.0,
        batching: BatchingOptions | None = None,
        warmup: bool = True,
        method_name_check: bool = False,
        allow_version_labels_for_unavailable_models: bool = False,
        max_message_bytes: int = 2**31 - 1,
        grpc_workers: int = 64,
        max_load_retries: int = 0,
        load_retry_interval_s: float = 60.0,
        tls: TlsConfig | None = None,
        grpc_socket_path: str | os.PathLike[str] | None = None,
        model_config_file: str | os.PathLike[str] | None = None,
        model_config_poll_seconds: float = 0.0,
        rest_timeout_s: float | None = 30.0,
    ) -> None:
        if models is None:
            if model_base_path is None:
                raise ValueError("give models=[ModelConfig(...)] or model_base_path=")
            models = [single_model(model_name, model_base_path, version_policy)]
        elif model_base_path is not None:
            raise ValueError("give either models= or model_base_path=, not both")
        if rest_port is not None and rest_port == port and port != 0:
            raise ServerConfigError(
                f"--rest-port {rest_port}: must differ from the gRPC port --port {port}"
            )
        self.models = list(models)
        self.host = host
        self._requested = (port, rest_port)
        self.port: int | None = None
        self.rest_port: int | None = None
        self.batching = batching
        self._warmup = warmup
        self._max_message_bytes = max_message_bytes
        self._grpc_workers = grpc_workers
        self._method_name_check = method_name_check
        self._poll_seconds = poll_seconds
        self._allow_unavailable_labels = allow_version_labels_for_unavailable_models
        # TF Serving retries failed loads 5 times a minute apart; a local server fails fast
        # unless asked to behave the same way.
        self._retries = (max_load_retries, load_retry_interval_s)
        self._config_file = None if model_config_file is None else str(model_config_file)
        self._config_poll = model_config_poll_seconds
        self._rest_timeout = rest_timeout_s
        self._watcher: threading.Thread | None = None
        self.tls = tls
        self.grpc_socket_path = None if grpc_socket_path is None else str(grpc_socket_path)
        self._grpc: Any = None
        self._rest: Any = None
        self._manager: ModelManager | None = None
        self._core: Any = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> ModelServer:
        """Load the models' initial versions, then open the ports. Returns ``self``.

        Raises:
            ServerConfigError: a base path does not exist.
            LocalServerError: a port cannot be bound, or a label names an unavailable version.
        """
        from tfship.server._core import ServingCore
        from tfship.server._grpc import start_grpc
        from tfship.server._status import RpcError

        for model in self.models:
            if not os.path.isdir(model.base_path):
                raise ServerConfigError(
                    f"Could not find base path {model.base_path} for servable {model.name}"
                )
        self._manager = ModelManager(
            self.models,
            poll_seconds=self._poll_seconds,
            warmup=self._run_warmup if self._warmup else None,
            allow_labels_for_unavailable=self._allow_unavailable_labels,
            on_load=self._attach_batcher if self.batching else None,
            max_load_retries=self._retries[0],
            load_retry_interval_s=self._retries[1],
        )
        self._core = ServingCore(self._manager, method_name_check=self._method_name_check)
        try:
            self._manager.start()
        except RpcError as exc:
            self._manager.stop()
            raise LocalServerError(exc.message) from exc
        failed = self._manager.failed_models()
        if failed:
            # TF Serving refuses to start when a model's first versions fail to load.
            self._manager.stop()
            raise LocalServerError(_unavailable_message(failed))
        port, rest_port = self._requested
        try:
            self._grpc, self.port = start_grpc(
                self._core, self.host, port, max_message_bytes=self._max_message_bytes,
                workers=self._grpc_workers, tls=self.tls, socket_path=self.grpc_socket_path,
            )
            if rest_port is not None:
                from tfship.server._rest import start_rest

                self._rest, self.rest_port = start_rest(
                    self._core, self.host, rest_port, timeout_s=self._rest_timeout
                )
        except BaseException:
            self.stop()
            raise
        if self._config_file is not None and self._config_poll > 0:
            self._watcher = threading.Thread(
                target=self._watch_config, name="tfship-config", daemon=True
            )
            self._watcher.start()
        logger.info("serving gRPC on %s", self.address)
        if self.rest_port is not None:
            logger.info("serving REST on %s", self.rest_url)
        return self

    def _watch_config(self) -> None:
        """Re-read the model config file when it changes (--model_config_file_poll_wait_seconds)."""
        from tfship.server._config import read_config_file

        assert self._config_file is not None
        seen = _mtime(self._config_file)
        while not self._stopped.wait(self._config_poll):
            current = _mtime(self._config_file)
            if current == seen:
                continue
            seen = current
            try:
                self.reload(read_config_file(self._config_file))
                logger.info("reloaded model config from %s", self._config_file)
            except (ServerConfigError, LocalServerError) as exc:
                logger.error("model config %s not applied: %s", self._config_file, exc)

    def _run_warmup(self, servable: Servable) -> None:
        from tfship.server._warmup import run_warmup

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
        if self._rest is not None:
            self._rest.shutdown()
            self._rest.server_close()
        if self._watcher is not None:
            self._watcher.join(timeout=30)
        if self._grpc is not None:
            self._grpc.stop(grace).wait()
        if self._manager is not None:
            self._manager.stop()
        logger.info("server stopped")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``stop()`` is called (by a signal handler, say); True once stopped."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> ModelServer:
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
            f"{e.version}: {e.state}" + (f" ({e.error.message})" if e.error else "")
            for e in events
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


def _unavailable_message(failed: Sequence[StateEvent]) -> str:
    # ServerCore's text: "N servable(s) did not become available: {{{name: m version: 1} due
    # to error: CODE: message}, }"
    parts = "".join(
        f"{{{{name: {e.model} version: {e.version}}} due to error: "
        f"{e.error.code.name if e.error else 'UNKNOWN'}: {e.error.message if e.error else ''}}}, "
        for e in failed
    )
    return f"{len(failed)} servable(s) did not become available: {{{parts}}}"
