"""``tfship serve``: run the local TF Serving-compatible server until SIGTERM or Ctrl-C."""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click

from tfship._output import echo_json
from tfship.cli._options import directory_option, file_option, flag, options, valued
from tfship.server._status import ServerConfigError

# TF Serving's flag -> ours: `tensorflow_model_server --port=8500 --rest_api_port=8501
# --model_name=m --model_base_path=/models/m` works as `tfship serve` with the same arguments.
_TFS_VALUE_FLAGS = {
    "port": "--port",
    "grpc_socket_path": "--grpc-socket-path",
    "rest_api_port": "--rest-port",
    "rest_api_timeout_in_ms": "--rest-api-timeout-ms",
    "model_name": "--model-name",
    "model_base_path": "--model-base-path",
    "model_config_file": "--model-config",
    "model_config_file_poll_wait_seconds": "--model-config-poll-seconds",
    "file_system_poll_wait_seconds": "--poll-seconds",
    "max_num_load_retries": "--max-num-load-retries",
    "batching_parameters_file": "--batching-parameters-file",
    "grpc_channel_arguments": "--grpc-channel-arguments",
    "monitoring_config_file": "--monitoring-config-file",
    "grpc_max_threads": "--grpc-max-threads",
    "ssl_config_file": "--ssl-config-file",
}
_TFS_BOOL_FLAGS = {
    "enable_batching": ("--enable-batching", None),
    "enable_signature_method_name_check": ("--enable-signature-method-name-check", None),
    "allow_version_labels_for_unavailable_models": ("--allow-version-labels-for-unavailable-models", None),
    "enable_model_warmup": (None, "--no-warmup"),  # default true: only "false" changes anything
    "enable_grpc_healthcheck_service": ("--enable-grpc-healthcheck-service", None),
    "enable_serialization_as_tensor_content": ("--enable-serialization-as-tensor-content", None),
}
# Tuning flags whose effect a local server has no use for: accepted, logged, ignored.
_TFS_IGNORED = frozenset(
    {
        "rest_api_num_threads",
        "num_load_threads",
        "num_unload_threads",
        "flush_filesystem_caches",
        "tensorflow_session_parallelism",
        "tensorflow_intra_op_parallelism",
        "tensorflow_inter_op_parallelism",
        "enable_profiler",
        "xla_cpu_compilation_enabled",
        "per_process_gpu_memory_fraction",
        "remove_unused_fields_from_bundle_metagraph",
        "skip_initialize_tpu",
    }
)
# The rest of TF Serving 2.20.0's flags: known, not supported here.
_TFS_UNSUPPORTED = frozenset(
    {
        "use_alts_credentials",
        "platform_config_file",
        "saved_model_tags",
        "prefer_tflite_model",
        "mixed_precision",
        "enable_per_model_batching_parameters",
        "thread_pool_factory_config_file",
        "tensorflow_session_config_file",
        "num_request_iterations_for_warmup",
        "rest_api_enable_cors_support",
        "num_tflite_pools",
        "num_tflite_interpreters_per_pool",
        "version",
        "xla_gpu_compilation_enabled",  # TF Serving 2.18+, experimental; no GPU here
    }
)
_TRUE, _FALSE = {"", "true", "1", "t", "yes"}, {"false", "0", "f", "no"}


def translate_tf_serving_flags(args: list[str]) -> list[str]:
    """Rewrite TF Serving's flag spellings (``--rest_api_port=8501``) into ours.

    Raises:
        ServerConfigError: a TF Serving flag this server does not support, or a bad boolean.
    """
    out: list[str] = []
    unsupported: list[str] = []
    items = iter(args)
    for arg in items:
        name, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if name in _TFS_VALUE_FLAGS:
            out.append(_TFS_VALUE_FLAGS[name] + eq + value)
        elif name == "load_retry_interval_micros":
            micros = value if eq else next(items, "")
            out.append("--load-retry-interval-seconds=" + _micros_to_seconds(micros))
        elif name in _TFS_BOOL_FLAGS:
            when_true, when_false = _TFS_BOOL_FLAGS[name]
            if value.lower() not in _TRUE | _FALSE:
                raise ServerConfigError(f"--{name}={value}: expected true or false")
            chosen = when_true if value.lower() in _TRUE else when_false
            out.extend([chosen] if chosen else [])
        elif name in _TFS_IGNORED:
            if not eq and not name.startswith(("flush", "enable", "skip", "remove", "xla")):
                next(items, None)  # its value
            logging.getLogger(__name__).info("--%s has no effect on tfship serve; ignored", name)
        elif name in _TFS_UNSUPPORTED:
            unsupported.append("--" + name)
        else:
            out.append(arg)
    if unsupported:
        raise ServerConfigError(
            f"TF Serving flag{'s' if len(unsupported) > 1 else ''} not supported by tfship "
            f"serve: {', '.join(unsupported)}"
        )
    return out


def _micros_to_seconds(text: str) -> str:
    try:
        return repr(max(int(text), 0) / 1e6)  # TF Serving: a negative interval does not wait
    except ValueError:
        raise ServerConfigError(
            f"--load_retry_interval_micros={text}: expected a whole number of microseconds"
        ) from None


class _ServeCommand(click.Command):
    """``serve`` that also takes TF Serving's own flags, and names unknown flags in one line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, translate_tf_serving_flags(list(args)))
        except click.NoSuchOption as exc:
            raise ServerConfigError(
                f"unknown flag {exc.option_name} (tfship serve takes its own flags, see "
                "--help, and TF Serving's: --port, --rest_api_port, --model_name, "
                "--model_base_path, --model_config_file, ...)"
            ) from None


# The options, in groups, in the order --help lists them.
_MODELS = options(
    directory_option(
        "--model-base-path", help="Directory holding numeric version sub-directories (1/, 2/, ...)."
    ),
    valued("--model-name", default="default", help="Name clients ask for."),
    file_option(
        "--model-config",
        "model_config",
        help="A model_config_list text proto (several models, version policies, labels).",
    ),
    valued(
        "--model-config-poll-seconds",
        default=0.0,
        type=click.FloatRange(0),
        help="Re-read --model-config this often (0: never).",
    ),
)
_PORTS = options(
    valued("--port", default=8500, type=click.IntRange(0, 65535), help="gRPC port; 0 picks a free one."),
    click.option(
        "--rest-port",
        type=click.IntRange(0, 65535),
        default=None,
        help="REST port (off unless given); 0 picks a free one.",
    ),
    valued(
        "--rest-api-timeout-ms",
        default=30000,
        type=click.IntRange(1),
        help="Longest REST model run before a 504.",
    ),
    click.option(
        "--rest-max-connections",
        type=click.IntRange(1),
        default=None,
        help="Most REST connections open at once; past it a new one is answered 503 "
        "and closed at once (a proxy in front retries elsewhere). Default: 1024, "
        "or half the open-file limit when that is lower.",
    ),
    valued(
        "--rest-max-inflated-bytes",
        type=click.IntRange(1),
        default=100 << 20,
        help="Size a gzip REST request body may inflate to; past it the request is answered 400.",
    ),
    valued("--host", default="127.0.0.1", help="Address to bind."),
)
_VERSIONS = options(
    valued("--version-policy", default="latest", help="latest, latest:N, all or specific:V[,V...]."),
    valued(
        "--poll-seconds",
        default=1.0,
        type=float,
        help="How often base paths are scanned for new or removed versions (0 or less: once, at start-up).",
    ),
)
_BATCHING = options(
    flag("--enable-batching", help="Merge concurrent Predict calls."),
    valued("--max-batch-size", default=32, type=click.IntRange(1)),
    valued("--batch-timeout-ms", default=1.0, type=click.FloatRange(0)),
    file_option(
        "--batching-parameters-file",
        help="BatchingParameters text proto (max_batch_size, batch_timeout_micros).",
    ),
)
_TF_SERVING = options(
    valued(
        "--grpc-max-threads",
        default=64,
        type=click.IntRange(1),
        help="Most threads answering gRPC calls at once. One per processor take the "
        "calls; more are added only while calls wait behind long ones.",
    ),
    click.option(
        "--grpc-channel-arguments", default="", help="gRPC server arguments, key=value[,key=value...]."
    ),
    file_option(
        "--monitoring-config-file",
        help="MonitoringConfig text proto; prometheus_config serves metrics over REST.",
    ),
    flag(
        "--allow-version-labels-for-unavailable-models",
        help="Let labels name versions that are not loaded yet.",
    ),
    flag("--no-warmup", help="Skip assets.extra/tf_serving_warmup_requests."),
    valued(
        "--max-num-load-retries",
        default=5,
        type=click.IntRange(0),
        help="Retry a failed load this many times, as TF Serving does (0: fail at once).",
    ),
    valued(
        "--load-retry-interval-seconds",
        default=60.0,
        type=click.FloatRange(0),
        help="Pause between load retries (TF Serving: 60 s).",
    ),
    flag(
        "--enable-signature-method-name-check",
        help="Refuse signatures whose method_name does not match the RPC (TF1 behaviour).",
    ),
    flag(
        "--enable-serialization-as-tensor-content",
        help="gRPC Predict answers carry outputs as tensor_content bytes (TF Serving 2.19+).",
    ),
    file_option(
        "--ssl-config-file",
        help="SSLConfig text proto (server_key, server_cert, custom_ca, client_verify).",
    ),
    file_option("--grpc-socket-path", help="Also serve gRPC on this unix socket."),
    flag(
        "--enable-grpc-healthcheck-service",
        help="Serve gRPC's health service (grpc.health.v1.Health): SERVING once every model is loaded.",
    ),
)
_REQUEST_LOG = options(
    valued(
        "--request-log-max-file-bytes",
        default=64 << 20,
        type=click.IntRange(1),
        help="Rotate a logging_config request log file before it passes this size.",
    ),
    valued(
        "--request-log-queue-size",
        default=1024,
        type=click.IntRange(1),
        help="Request log records waiting to be written at most; more are dropped and counted.",
    ),
    click.option("--request-log-dc", default="", help="This server's dc for per_task_sampling_configs."),
    click.option(
        "--request-log-task-index",
        type=click.IntRange(0),
        help="This server's task_index for per_task_sampling_configs.",
    ),
)


@click.command("serve", cls=_ServeCommand)
@_MODELS
@_PORTS
@_VERSIONS
@_BATCHING
@_TF_SERVING
@_REQUEST_LOG
@flag(
    "--no-open-inference",
    help="Do not serve the Open Inference Protocol (KServe V2) beside TF Serving's API.",
)
@flag("--json", "as_json", help="Print the ports and models as JSON.")
def serve(
    model_base_path: Path | None,
    model_name: str,
    model_config: Path | None,
    model_config_poll_seconds: float,
    port: int,
    rest_port: int | None,
    rest_api_timeout_ms: int,
    rest_max_connections: int | None,
    rest_max_inflated_bytes: int,
    host: str,
    version_policy: str,
    poll_seconds: float,
    enable_batching: bool,
    max_batch_size: int,
    batch_timeout_ms: float,
    batching_parameters_file: Path | None,
    grpc_max_threads: int,
    grpc_channel_arguments: str,
    monitoring_config_file: Path | None,
    allow_version_labels_for_unavailable_models: bool,
    no_warmup: bool,
    max_num_load_retries: int,
    load_retry_interval_seconds: float,
    enable_signature_method_name_check: bool,
    enable_serialization_as_tensor_content: bool,
    ssl_config_file: Path | None,
    grpc_socket_path: Path | None,
    enable_grpc_healthcheck_service: bool,
    request_log_max_file_bytes: int,
    request_log_queue_size: int,
    request_log_dc: str,
    request_log_task_index: int | None,
    no_open_inference: bool,
    as_json: bool,
) -> None:
    """Serve SavedModels over TensorFlow Serving's gRPC (and REST) API until stopped.

    Any TF Serving client works against it: the official stubs, curl on the REST API, or
    `tfship client`. SIGTERM and Ctrl-C stop it gracefully.

    \b
    Example:
      tfship serve --model-base-path export/penguins --model-name penguins --port 0 --rest-port 0
    """
    from tfship.server._config import (
        parse_grpc_arguments,
        read_batching_parameters,
        read_ssl_config,
    )
    from tfship.server._metrics import read_monitoring_config
    from tfship.server._request_log import RequestLogOptions
    from tfship.server._server import BatchingOptions, ModelServer, ServerOptions

    models = _models(model_base_path, model_name, model_config, version_policy)
    batching = None
    if enable_batching:
        batching = BatchingOptions(max_batch_size, batch_timeout_ms / 1000.0)
        if batching_parameters_file is not None:
            batching = read_batching_parameters(batching_parameters_file, batching)
    metrics = read_monitoring_config(monitoring_config_file) if monitoring_config_file else None
    options = ServerOptions(
        host=host,
        port=port,
        rest_port=rest_port,
        poll_seconds=poll_seconds,
        batching=batching,
        warmup=not no_warmup,
        method_name_check=enable_signature_method_name_check,
        allow_version_labels_for_unavailable_models=allow_version_labels_for_unavailable_models,
        max_load_retries=max_num_load_retries,
        load_retry_interval_s=load_retry_interval_seconds,
        tls=read_ssl_config(ssl_config_file) if ssl_config_file else None,
        grpc_socket_path=grpc_socket_path,
        grpc_arguments=parse_grpc_arguments(grpc_channel_arguments),
        grpc_workers=grpc_max_threads,
        model_config_file=model_config,
        model_config_poll_seconds=model_config_poll_seconds,
        rest_timeout_s=rest_api_timeout_ms / 1000.0,
        rest_max_connections=rest_max_connections,
        rest_max_inflated_bytes=rest_max_inflated_bytes,
        prometheus_path=None if metrics is None else metrics.path,
        grpc_health=enable_grpc_healthcheck_service,
        tensor_content=enable_serialization_as_tensor_content,
        request_log=RequestLogOptions(
            request_log_max_file_bytes, request_log_queue_size, request_log_dc, request_log_task_index
        ),
        open_inference=not no_open_inference,
    )
    if rest_port is not None and rest_port == port and port != 0:
        raise ServerConfigError(f"--rest-port {rest_port}: must differ from the gRPC port --port")
    server = ModelServer(models, options)
    _keep_large_buffers()
    _raise_open_file_limit()
    stop = _StopRequest()
    previous = _on_signals(stop)
    try:
        server.start()
        _announce(server, as_json)
        while not stop.requested:
            time.sleep(0.05)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()  # logs the one "server stopped" line
        for number, handler in previous.items():
            signal.signal(number, handler)
    _exit_now_if_program()


def _keep_large_buffers() -> None:
    """Let glibc's malloc reuse the memory of large answers instead of returning it to the OS.

    Each answer allocates its tensor, its serialized bytes and gRPC's copy of them; by default
    glibc gives such blocks back on free (unmapping them, or trimming the heap of the worker
    thread's arena) and the next answer faults every page in again: about 1,000 page faults,
    a millisecond of CPU, for a 4 MiB answer. Blocks up to 32 MiB now come from the heaps,
    which keep up to 128 MiB free at their top. This is the server's own process (a command),
    so the setting is ours to make; without glibc (macOS, musl) nothing changes.
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 128 << 20)


def _raise_open_file_limit() -> None:
    """Raise the soft limit on open files to the hard limit, as servers do.

    The soft limit is often 1,024: a thousand idle clients would leave no descriptor to list
    a base path or read a version's files. The process is the command's own, so the setting
    is ours to make; where the hard limit cannot be taken (unlimited on macOS), the soft one
    stays as it was.
    """
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, OSError, ValueError) as exc:  # no such limit, or not ours to raise
        logging.getLogger(__name__).debug("open-file limit left as it was: %s", exc)


def _exit_now_if_program() -> None:
    """End the process at once when ``tfship serve`` is the program, not a call inside another.

    The server has stopped and unloaded every model, so nothing is left to finish; the
    interpreter's own teardown of TensorFlow's modules would still take about a second.
    """
    import contextlib
    import os
    import sys

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    from tfship.cli import main as entry_point

    if (spec is not None and spec.name == "tfship.__main__") or getattr(main, "main", None) is entry_point:
        # A reader that went away (a parent killed) leaves broken pipes: exit all the same.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        with contextlib.suppress(OSError, ValueError):
            logging.shutdown()
        os._exit(0)


def _models(base_path: Path | None, name: str, config: Path | None, policy: str) -> list[Any]:
    from tfship.server._config import read_config_file, single_model
    from tfship.server._status import ServerConfigError

    if config is not None:
        if base_path is not None:
            raise ServerConfigError("give either --model-config or --model-base-path, not both")
        return read_config_file(config)
    if base_path is None:
        raise ServerConfigError(
            "nothing to serve: give --model-base-path DIR (with numeric version directories) "
            "or --model-config FILE"
        )
    return [single_model(name, base_path, policy)]


class _StopRequest:
    """A flag a signal handler sets. Not an ``Event``: a handler that takes the Event's lock
    while the main thread, which it interrupts, holds it (inside ``wait``) never returns."""

    requested = False


def _on_signals(stop: _StopRequest) -> dict[int, Any]:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.requested = True

    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # signals can only be handled on the main thread (e.g. under a test)
    for number in (signal.SIGTERM, signal.SIGINT):
        previous[number] = signal.signal(number, handler)
    return previous


def _announce(server: Any, as_json: bool) -> None:
    info = server.describe()
    if as_json:
        echo_json(info)
        return
    for model in info["models"]:
        versions = ", ".join(map(str, model["available_versions"])) or "none yet"
        click.echo(
            f"model {model['name']}: versions {versions} from {_shown(model['base_path'])} "
            f"(policy {model['version_policy']})"
        )
    click.echo(f"gRPC  {info['grpc']}" + (" (TLS)" if info["tls"] else ""))
    if info["grpc_socket"]:
        click.echo(f"gRPC  {info['grpc_socket']}")
    if info["rest"]:
        click.echo(f"REST  {info['rest']}/v1/models/{info['models'][0]['name']}")
    click.echo("Ctrl-C or SIGTERM stops the server.", err=True)


def _shown(path: str) -> str:
    """A base path as the user would type it: relative when it is under the working directory."""
    import os

    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
