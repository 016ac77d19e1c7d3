"""``tfship serve``: run the local TF Serving-compatible server until SIGTERM or Ctrl-C."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click


@click.command("serve")
@click.option(
    "--model-base-path",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory holding numeric version sub-directories (1/, 2/, ...).",
)
@click.option("--model-name", default="default", show_default=True, help="Name clients ask for.")
@click.option(
    "--model-config",
    "model_config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A model_config_list text proto (several models, version policies, labels).",
)
@click.option("--model-config-poll-seconds", default=0.0, show_default=True,
              type=click.FloatRange(0), help="Re-read --model-config this often (0: never).")
@click.option("--port", default=8500, show_default=True, type=click.IntRange(0, 65535),
              help="gRPC port; 0 picks a free one.")
@click.option("--rest-port", type=click.IntRange(0, 65535), default=None,
              help="REST port (off unless given); 0 picks a free one.")
@click.option("--rest-api-timeout-ms", default=30000, show_default=True,
              type=click.IntRange(1), help="Longest REST model run before a 504.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--version-policy", default="latest", show_default=True,
              help="latest, latest:N, all or specific:V[,V...].")
@click.option("--poll-seconds", default=1.0, show_default=True, type=click.FloatRange(0.05),
              help="How often base paths are scanned for new or removed versions.")
@click.option("--enable-batching", is_flag=True, help="Merge concurrent Predict calls.")
@click.option("--max-batch-size", default=32, show_default=True, type=click.IntRange(1))
@click.option("--batch-timeout-ms", default=1.0, show_default=True, type=click.FloatRange(0))
@click.option("--no-warmup", is_flag=True, help="Skip assets.extra/tf_serving_warmup_requests.")
@click.option("--max-num-load-retries", default=0, show_default=True, type=click.IntRange(0),
              help="Retry a failed load this many times (TF Serving: 5).")
@click.option("--load-retry-interval-seconds", default=60.0, show_default=True,
              type=click.FloatRange(0), help="Pause between load retries.")
@click.option("--enable-signature-method-name-check", is_flag=True,
              help="Refuse signatures whose method_name does not match the RPC (TF1 behaviour).")
@click.option("--ssl-config-file", type=click.Path(dir_okay=False, path_type=Path),
              help="SSLConfig text proto (server_key, server_cert, custom_ca, client_verify).")
@click.option("--grpc-socket-path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also serve gRPC on this unix socket.")
@click.option("--json", "as_json", is_flag=True, help="Print the ports and models as JSON.")
def serve(
    model_base_path: Path | None,
    model_name: str,
    model_config: Path | None,
    model_config_poll_seconds: float,
    port: int,
    rest_port: int | None,
    rest_api_timeout_ms: int,
    host: str,
    version_policy: str,
    poll_seconds: float,
    enable_batching: bool,
    max_batch_size: int,
    batch_timeout_ms: float,
    no_warmup: bool,
    max_num_load_retries: int,
    load_retry_interval_seconds: float,
    enable_signature_method_name_check: bool,
    ssl_config_file: Path | None,
    grpc_socket_path: Path | None,
    as_json: bool,
) -> None:
    """Serve SavedModels over TensorFlow Serving's gRPC (and REST) API until stopped.

    Any TF Serving client works against it: the official stubs, curl on the REST API, or
    `tfship client`. SIGTERM and Ctrl-C stop it gracefully.

    \b
    Example:
      tfship serve --model-base-path export/penguins --model-name penguins --port 0 --rest-port 0
    """
    from tfship.server._config import read_ssl_config
    from tfship.server._server import BatchingOptions, ModelServer

    models = _models(model_base_path, model_name, model_config, version_policy)
    batching = (
        BatchingOptions(max_batch_size, batch_timeout_ms / 1000.0) if enable_batching else None
    )
    server = ModelServer(
        models,
        host=host,
        port=port,
        rest_port=rest_port,
        poll_seconds=poll_seconds,
        batching=batching,
        warmup=not no_warmup,
        method_name_check=enable_signature_method_name_check,
        max_load_retries=max_num_load_retries,
        load_retry_interval_s=load_retry_interval_seconds,
        tls=read_ssl_config(ssl_config_file) if ssl_config_file else None,
        grpc_socket_path=grpc_socket_path,
        model_config_file=model_config,
        model_config_poll_seconds=model_config_poll_seconds,
        rest_timeout_s=rest_api_timeout_ms / 1000.0,
    )
    stop = threading.Event()
    previous = _on_signals(stop)
    try:
        server.start()
        _announce(server, as_json)
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
    click.echo("stopped", err=True)


def _models(
    base_path: Path | None, name: str, config: Path | None, policy: str
) -> list[Any]:
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


def _on_signals(stop: threading.Event) -> dict[int, Any]:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # signals can only be handled on the main thread (e.g. under a test)
    for number in (signal.SIGTERM, signal.SIGINT):
        previous[number] = signal.signal(number, handler)
    return previous


def _announce(server: Any, as_json: bool) -> None:
    info = server.describe()
    if as_json:
        click.echo(json.dumps(info))
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
