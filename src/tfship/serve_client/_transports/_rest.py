"""The REST transports: TF Serving's HTTP/JSON API (``/v1/models/...``) over pooled connections.

Requests arrive as the same protobuf messages the gRPC transport sends and leave as JSON
bodies; JSON answers come back as the same response messages, so the client maps one kind of
answer. Differences that come from REST itself: answers carry no ``model_spec`` (the servable
asked for is reported), ``output_filter`` is applied here, output dtypes (lost in JSON) come
from the signature the client passes along, and there is no MultiInference or config reload.

Connections are kept open across calls by ``httpx`` (``httpx.Client`` here,
``httpx.AsyncClient`` for the asyncio client); environment proxies are ignored, as the
gRPC transport ignores them.
"""

from __future__ import annotations

import json
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from tfship._wire import (
    CODE_OF_HTTP,
    DEFAULT_SIGNATURE,
    JsonError,
    answer_from_json,
    decode_tensor,
    example_to_json,
    protos,
    tensor_to_json,
)
from tfship.serve_client._errors import (
    MalformedResponseError,
    ServingCallError,
    UnimplementedError,
    error_from_status,
)
from tfship.serve_client._options import TlsConfig
from tfship.serve_client._results import PredictOutputs
from tfship.serve_client._transports._base import Call

__all__ = ["AsyncRestTransport", "RestTransport"]

_VERBS = {"Predict": ":predict", "Classify": ":classify", "Regress": ":regress"}
_NOT_IN_REST = {
    "MultiInference": "TF Serving's REST API has no MultiInference",
    "HandleReloadConfigRequest": "TF Serving's REST API cannot reload the model config",
}


class _RestBase:
    """What both REST transports keep: the base URL, headers, TLS and the JSON mapping."""

    needs_signature = True

    def __init__(self, url: str, *, tls: Any, headers: Mapping[str, str] | None) -> None:
        scheme = "https" if tls else "http"
        self.url = (url if "://" in url else f"{scheme}://{url}").rstrip("/")
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self._verify: Any = _ssl_context(tls) if tls else True
        server_name = tls.server_name if isinstance(tls, TlsConfig) else None
        self._extensions = {"sni_hostname": server_name} if server_name else None
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def _client_options(self, max_connections: int) -> dict[str, Any]:
        import httpx

        return {
            "verify": self._verify,
            "trust_env": False,  # never through a proxy from the environment
            "headers": self.headers,
            "limits": httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        }

    def _prepare(self, call: Call, timeout: float | None) -> dict[str, Any]:
        """The keywords of ``httpx.Client.request`` for ``call``."""
        import httpx

        if call.method in _NOT_IN_REST:
            raise UnimplementedError(
                f"{_NOT_IN_REST[call.method]}; use ServingClient over gRPC (a host:port target)",
                code="UNIMPLEMENTED",
                model=call.model,
            )
        verb, path, body = rest_request(call.method, call.request)
        options: dict[str, Any] = {
            "method": verb,
            "url": self.url + path,
            "timeout": httpx.Timeout(timeout),
        }
        if body is not None:
            options["content"] = json.dumps(body).encode("utf-8")
        if self._extensions:
            options["extensions"] = self._extensions
        return options

    def _finish(self, call: Call, response: Any) -> Any:
        """The answer of ``call`` from an ``httpx.Response``, or its ServingCallError."""
        if response.status_code >= 400:
            raise _http_error(response.status_code, response.content, call.context)
        try:
            doc = json.loads(response.content)
        except ValueError:
            raise MalformedResponseError(
                f"{call.method}: the answer is not JSON: {response.content[:200]!r}",
                model=call.model,
            ) from None
        try:
            return rest_answer(call, doc)
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedResponseError(
                f"{call.method}: unexpected answer ({type(exc).__name__}: {exc}): {str(doc)[:200]}",
                model=call.model,
            ) from None


class RestTransport(_RestBase):
    """TF Serving's REST API over kept-alive HTTP connections, for :class:`ServingClient`.

    Args:
        url: ``http://host:port`` (``host:port`` is accepted; ``https`` when ``tls`` is set).
        tls: ``True`` (system roots) or a :class:`TlsConfig` (CA, client certificate for
            mutual TLS, server name).
        headers: HTTP headers sent with every call.
        max_connections: connections kept open to the server at most (one per concurrent call).

    Example:
        >>> client = ServingClient(transport=RestTransport("http://127.0.0.1:8501"))  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        tls: Any = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 16,
    ) -> None:
        import httpx

        super().__init__(url, tls=tls, headers=headers)
        self._http = httpx.Client(**self._client_options(max_connections))

    def send(self, call: Call, timeout: float | None) -> Any:
        """Send one call; HTTP and connection failures leave as ``ServingCallError`` subclasses."""
        import httpx

        options = self._prepare(call, timeout)
        try:
            response = self._http.request(**options)
        except httpx.HTTPError as exc:
            raise _connection_error(exc, call.context) from None
        return self._finish(call, response)

    def close(self) -> None:
        """Close the kept-alive connections; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            self._http.close()


class AsyncRestTransport(_RestBase):
    """:class:`RestTransport` on asyncio (``httpx.AsyncClient``), for ``AsyncServingClient``."""

    def __init__(
        self,
        url: str,
        *,
        tls: Any = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 64,
    ) -> None:
        import httpx

        super().__init__(url, tls=tls, headers=headers)
        self._http = httpx.AsyncClient(**self._client_options(max_connections))

    async def send(self, call: Call, timeout: float | None) -> Any:
        """Send one call; HTTP and connection failures leave as ``ServingCallError`` subclasses."""
        import httpx

        options = self._prepare(call, timeout)
        try:
            response = await self._http.request(**options)
        except httpx.HTTPError as exc:
            raise _connection_error(exc, call.context) from None
        return self._finish(call, response)

    async def aclose(self) -> None:
        """Close the kept-alive connections; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            await self._http.aclose()


# ------------------------------------------------------------------------ TLS and errors


def _ssl_context(tls: Any) -> ssl.SSLContext:
    if tls is True:
        return ssl.create_default_context()
    if not isinstance(tls, TlsConfig):
        raise TypeError(f"tls must be True or a TlsConfig for REST, got {tls!r}")
    ca = tls.ca_cert
    if isinstance(ca, bytes):
        context = ssl.create_default_context(cadata=ca.decode("ascii"))
    else:
        context = ssl.create_default_context(cafile=None if ca is None else str(ca))
    if tls.client_cert is not None and tls.client_key is not None:
        _load_client_cert(context, tls.client_cert, tls.client_key)
    return context


def _load_client_cert(context: ssl.SSLContext, cert: bytes | str | Path, key: bytes | str | Path) -> None:
    """Load a client certificate given as paths or PEM bytes (ssl reads only files)."""
    if not isinstance(cert, bytes) and not isinstance(key, bytes):
        context.load_cert_chain(str(cert), str(key))
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, value in (("cert.pem", cert), ("key.pem", key)):
            path = Path(tmp) / name
            path.write_bytes(value if isinstance(value, bytes) else Path(value).read_bytes())
            paths.append(str(path))
        context.load_cert_chain(paths[0], paths[1])


def _connection_error(exc: Any, context: Mapping[str, Any]) -> ServingCallError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return error_from_status("DEADLINE_EXCEEDED", f"no answer in time ({exc})", **context)
    return error_from_status("UNAVAILABLE", f"cannot connect: {exc}", **context)


def _http_error(status: int, raw: bytes, context: Mapping[str, Any]) -> ServingCallError:
    try:
        message = str(json.loads(raw).get("error", ""))
    except (ValueError, AttributeError):
        message = raw.decode("utf-8", "replace")[:1024]
    code = CODE_OF_HTTP.get(status, "INTERNAL")
    return error_from_status(code, message or f"HTTP {status}", **context)


# ------------------------------------------------------------- requests to JSON bodies


def rest_request(method: str, request: Any) -> tuple[str, str, dict[str, Any] | None]:
    """(HTTP method, path, JSON body) of TF Serving's REST call for a request message.

    Example:
        >>> from tfship.serve_client._calls import status_request
        >>> rest_request("GetModelStatus", status_request("m", version=3))
        ('GET', '/v1/models/m/versions/3', None)
    """
    path = model_path(request.model_spec)
    if method == "GetModelStatus":
        return "GET", path, None
    if method == "GetModelMetadata":
        return "GET", path + "/metadata", None
    if method == "Predict":
        body = {"inputs": {k: tensor_to_json(decode_tensor(t)) for k, t in request.inputs.items()}}
    else:
        body = _examples_body(request.input)
    if request.model_spec.signature_name:
        body["signature_name"] = request.model_spec.signature_name
    return "POST", path + _VERBS[method], body


def model_path(spec: Any) -> str:
    """``/v1/models/NAME[/versions/N | /labels/LABEL]`` for a ``ModelSpec``."""
    path = f"/v1/models/{quote(spec.name, safe='')}"
    if spec.HasField("version"):
        path += f"/versions/{spec.version.value}"
    elif spec.version_label:
        path += f"/labels/{quote(spec.version_label, safe='')}"
    return path


def _examples_body(input_message: Any) -> dict[str, Any]:
    kind = input_message.WhichOneof("kind")
    if kind == "example_list_with_context":
        listed = input_message.example_list_with_context
        return {
            "examples": [example_to_json(e) for e in listed.examples],
            "context": example_to_json(listed.context),
        }
    return {"examples": [example_to_json(e) for e in input_message.example_list.examples]}


# ------------------------------------------------------------ JSON answers to responses


def rest_answer(call: Call, doc: Any) -> Any:
    """The response message (Predict: ``PredictOutputs``) for a JSON answer to ``call``."""
    if call.method == "GetModelStatus":
        return _status_response(doc)
    if call.method == "GetModelMetadata":
        return _metadata_response(doc)
    spec = asked_spec(call.request.model_spec)
    if call.method == "Predict":
        outputs = _outputs_from_json(doc.get("outputs"), call.signature)
        wanted = list(call.request.output_filter)
        if wanted:  # TF Serving's REST API has no output filter: every output comes back
            outputs = {k: outputs[k] for k in wanted if k in outputs}
        return PredictOutputs(outputs, spec, doc)
    if call.method == "Classify":
        return _classify_response(doc, spec)
    return _regress_response(doc, spec)


def asked_spec(spec: Any) -> Any:
    """The servable asked for, standing in for the ``model_spec`` REST answers lack."""
    answered = protos().model_pb2.ModelSpec()
    answered.CopyFrom(spec)
    answered.signature_name = spec.signature_name or DEFAULT_SIGNATURE
    return answered


def _status_response(doc: Any) -> Any:
    from google.protobuf import json_format

    response = protos().get_model_status_pb2.GetModelStatusResponse()
    json_format.ParseDict(doc, response, ignore_unknown_fields=True)
    return response


def _metadata_response(doc: Any) -> Any:
    from google.protobuf import json_format

    pb = protos()
    response = pb.get_model_metadata_pb2.GetModelMetadataResponse()
    json_format.ParseDict(doc.get("model_spec", {}), response.model_spec, ignore_unknown_fields=True)
    signatures = pb.get_model_metadata_pb2.SignatureDefMap()
    json_format.ParseDict(
        doc.get("metadata", {}).get("signature_def", {}), signatures, ignore_unknown_fields=True
    )
    response.metadata["signature_def"].Pack(signatures)
    return response


def _classify_response(doc: Any, spec: Any) -> Any:
    response = protos().classification_pb2.ClassificationResponse()
    response.model_spec.CopyFrom(spec)
    for row in doc["results"]:
        classes = response.result.classifications.add().classes
        for label, score in row:
            classes.add(label=str(label), score=float(score))
    return response


def _regress_response(doc: Any, spec: Any) -> Any:
    response = protos().regression_pb2.RegressionResponse()
    response.model_spec.CopyFrom(spec)
    for value in np.asarray(doc["results"], dtype=np.float64).reshape(-1):
        response.result.regressions.add(value=float(value))
    return response


def _outputs_from_json(value: Any, sig: Any) -> dict[str, np.ndarray[Any, Any]]:
    names = [] if sig is None else list(sig.outputs)
    if not isinstance(value, dict) or (len(names) == 1 and names[0] not in value):
        value = {names[0] if names else "outputs": value}
    table = {} if sig is None else sig.outputs
    return {key: _array(item, table.get(key)) for key, item in value.items()}


def _array(value: Any, info: Any) -> np.ndarray[Any, Any]:
    try:
        return answer_from_json(value, getattr(info, "dtype", None))
    except JsonError as exc:
        raise MalformedResponseError(f"the REST answer's output does not fit its signature: {exc}") from None
