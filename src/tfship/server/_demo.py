"""The serving step of ``tfship demo``: start the local server on an export, call it, stop it."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tfship.server._server import ModelServer, ServerOptions


class DemoServer:
    """A started server plus what the demo printed; ``stop()`` or ``with`` ends it.

    Example:
        >>> with run_demo_step(Path("export/best"), "penguins", print) as demo:  # doctest: +SKIP
        ...     demo.address
        '127.0.0.1:40123'
    """

    def __init__(self, server: ModelServer) -> None:
        self.server = server
        self.address = server.address
        self.rest_url = server.rest_url

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        self.server.stop()

    def __enter__(self) -> DemoServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def run_demo_step(
    base_path: Path,
    model_name: str,
    echo: Callable[[str], None],
    records: Sequence[Mapping[str, Any]] = (),
) -> DemoServer:
    """Serve ``base_path`` as ``model_name`` on free ports and call it over gRPC and REST.

    Prints the ports, the model status, the signatures from GetModelMetadata and, for a
    classification ``serving_default``, one Classify call with ``records`` as Examples (values
    typed by the export's ``assets.extra/tfship.json`` receiver features when present; CSV
    strings are fine) or an empty Example when none are given. The server keeps running until
    the returned object's ``stop()`` (or the end of its ``with`` block).

    Args:
        base_path: an export base directory holding numeric version sub-directories.
        model_name: the name clients use.
        echo: where to print progress (``click.echo`` in the CLI).
        records: feature name -> value mappings to classify (e.g. rows of a CSV file).

    Returns:
        A :class:`DemoServer`; use it as a context manager or call ``stop()``.
    """
    server = ModelServer.from_base_path(
        base_path, model_name, options=ServerOptions(port=0, rest_port=0)
    )
    server.start()
    try:
        version = server.wait_until_available(model_name, timeout=60)
        echo(f"serving {model_name} version {version}: gRPC {server.address}, "
             f"REST {server.rest_url}")
        _call(server, model_name, echo, records)
    except BaseException:
        server.stop()
        raise
    return DemoServer(server)


def _call(
    server: ModelServer,
    model_name: str,
    echo: Callable[[str], None],
    records: Sequence[Mapping[str, Any]],
) -> None:
    import grpc
    from tensorflow_serving.apis import (
        get_model_metadata_pb2,
        prediction_service_pb2_grpc,
    )

    with urllib.request.urlopen(f"{server.rest_url}/v1/models/{model_name}", timeout=30) as r:
        status = json.loads(r.read())["model_version_status"]
    echo("GET /v1/models/" + model_name + " -> " + ", ".join(
        f"version {s['version']} {s['state']}" for s in status))
    with grpc.insecure_channel(server.address) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
        request.model_spec.name = model_name
        response = stub.GetModelMetadata(request, timeout=30)
        signatures = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signatures)
        echo("GetModelMetadata -> signatures: " + ", ".join(sorted(signatures.signature_def)))
        version_dir = base_path_of(server, model_name)
        _classify(stub, model_name, signatures, echo, records, _feature_dtypes(version_dir))


def base_path_of(server: ModelServer, model_name: str) -> Path:
    """The directory of the newest available version of ``model_name``."""
    model = next(m for m in server.models if m.name == model_name)
    return Path(model.base_path) / str(server.available_versions(model_name)[-1])


def _feature_dtypes(version_dir: Path) -> dict[str, str]:
    try:
        manifest = json.loads((version_dir / "assets.extra" / "tfship.json").read_text())
        features = manifest["receiver"]["features"]
        return {name: str(spec["dtype"]) for name, spec in features.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _example(record: Mapping[str, Any], dtypes: Mapping[str, str], example: Any) -> None:
    for name, value in record.items():
        if value is None or value == "":
            continue  # a missing value: the receiver's default applies
        feature = example.features.feature[name]
        kind = dtypes.get(name) or (
            "string" if isinstance(value, (str, bytes)) else
            "int64" if isinstance(value, int) else "float32"
        )
        if kind.startswith("float"):
            feature.float_list.value.append(float(value))
        elif kind.startswith("int"):
            feature.int64_list.value.append(int(float(value)))
        else:
            text = value if isinstance(value, bytes) else str(value).encode("utf-8")
            feature.bytes_list.value.append(text)


def _classify(
    stub: Any,
    model_name: str,
    signatures: Any,
    echo: Callable[[str], None],
    records: Sequence[Mapping[str, Any]],
    dtypes: Mapping[str, str],
) -> None:
    import grpc
    from tensorflow_serving.apis import classification_pb2

    default = signatures.signature_def.get("serving_default")
    if default is None or default.method_name != "tensorflow/serving/classify":
        return
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = model_name
    for record in records or [{}]:
        _example(record, dtypes, request.input.example_list.examples.add())
    try:
        results = stub.Classify(request, timeout=30).result.classifications
    except grpc.RpcError as exc:
        first_line = (exc.details() or "").splitlines()[0] if exc.details() else ""
        echo(f"Classify -> {exc.code().name}: {first_line}")
        return
    for record, result in zip(records or [{}], results):
        best = max(result.classes, key=lambda c: c.score)
        shown = ", ".join(f"{k}={v}" for k, v in list(record.items())[:3]) or "defaults"
        echo(f"Classify ({shown}, ...) -> {best.label} ({best.score:.3f})")
