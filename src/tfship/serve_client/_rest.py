"""``RestServingClient``: the ``ServingClient`` API over TF Serving's REST endpoint.

Same methods, same result types, same errors. Differences that come from REST itself:
TF Serving's REST answers carry no model_spec (the result reports the version asked for, or
None), ``output_filter`` is applied client-side, and there is no MultiInference or reload.
Output dtypes (lost in JSON) come from the signature, fetched once from ``/metadata``.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import numpy as np

from tfship._wire import CODE_OF_HTTP, b64_json, decode_tensor, protos, text_or_b64
from tfship.serve_client._calls import (
    Waiter,
    checked_version,
    pick_signature,
    predict_inputs,
    to_example,
    wait_until_available,
)
from tfship.serve_client._client import (
    DEFAULT,
    DEFAULT_RETRIES,
    RetryPolicy,
    TLSConfig,
    _ClientCore,
    deadline_for,
    run_with_retries,
)
from tfship.serve_client._errors import (
    MalformedResponseError,
    ServingCallError,
    UnimplementedError,
    error_from_status,
)
from tfship.serve_client._results import (
    ClassifyResult,
    ModelMetadata,
    ModelSpec,
    MultiInferenceResult,
    PredictResult,
    RegressResult,
    VersionStatus,
    asked_spec,
    signature_infos,
)

__all__ = ["RestServingClient"]

_STATE = {"UNKNOWN", "START", "LOADING", "AVAILABLE", "UNLOADING", "END"}


class RestServingClient(_ClientCore):
    """The :class:`ServingClient` API over HTTP/JSON (``/v1/models/...``).

    Args:
        url: ``http://host:port`` (``host:port`` is accepted; ``https`` when ``tls`` is set).
        timeout: default deadline of each call in seconds (``None``: no deadline).
        retries: a :class:`RetryPolicy`, or the number of retries on ``UNAVAILABLE`` (503).
        tls: ``True`` or a :class:`TLSConfig` (CA and client certificate as PEM files or bytes).
        headers: HTTP headers sent with every call.
        validate: check inputs against the signature before sending.
        cast: let numpy inputs be cast to the signature's dtype within the same kind.

    Example:
        >>> with RestServingClient("http://127.0.0.1:8501") as rest:  # doctest: +SKIP
        ...     rest.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]}).as_numpy("scores")
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float | None = 30.0,
        retries: int | RetryPolicy | None = DEFAULT_RETRIES,
        tls: Any = None,
        headers: Mapping[str, str] | None = None,
        validate: bool = True,
        cast: bool = False,
    ) -> None:
        scheme = "https" if tls else "http"
        self.url = (url if "://" in url else f"{scheme}://{url}").rstrip("/")
        super().__init__(timeout=timeout, retries=retries, validate=validate, cast=cast)
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        handlers: list[Any] = [urllib.request.ProxyHandler({})]  # never via a proxy
        if tls:
            handlers.append(urllib.request.HTTPSHandler(context=_ssl_context(tls)))
        self._opener = urllib.request.build_opener(*handlers)

    def __enter__(self) -> RestServingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Forget cached metadata; calling it again does nothing."""
        self._closed = True

    def __repr__(self) -> str:
        return f"RestServingClient({self.url!r}, timeout={self.timeout})"

    # -- HTTP with retries and error mapping
    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        model: str | None,
        version: int | str | None,
        timeout: Any,
    ) -> Any:
        if self._closed:
            raise RuntimeError("this RestServingClient is closed")
        data = None if body is None else json.dumps(body).encode("utf-8")
        context = {"model": model, "version": version, "method": f"{method} {path}"}

        def attempt(remaining: float | None) -> Any:
            request = urllib.request.Request(self.url + path, data=data, method=method, headers=self.headers)
            return self._send(request, remaining, context)

        return run_with_retries(
            attempt,
            policy=self.retry_policy,
            deadline=deadline_for(timeout, self.timeout),
            rng=self._rng,
            sleep=time.sleep,
            context=context,
        )

    def _send(self, request: Any, remaining: float | None, context: Mapping[str, Any]) -> Any:
        try:
            with self._opener.open(request, timeout=remaining) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise _http_error(exc, context) from None
        except (TimeoutError, socket.timeout) as exc:
            raise error_from_status("DEADLINE_EXCEEDED", f"no answer in time ({exc})", **context) from None
        except (urllib.error.URLError, ConnectionError) as exc:
            raise _connection_error(exc, context) from None
        try:
            return json.loads(body)
        except ValueError:
            raise MalformedResponseError(
                f"{context['method']}: the answer is not JSON: {body[:200]!r}",
                model=context.get("model"),
            ) from None

    def _post(
        self, model: str, version: int | None, label: str | None, verb: str, body: Any, timeout: Any
    ) -> Any:
        path = self._model_path(model, version, label) + verb
        return self._request("POST", path, body, model=model, version=version or label, timeout=timeout)

    def _model_path(self, model: str, version: int | None, label: str | None) -> str:
        if version is not None and label is not None:
            raise ValueError("give version or label, not both")
        if not model:
            raise ValueError("model name must be a non-empty string")
        path = f"/v1/models/{quote(model, safe='')}"
        if version is not None:
            path += f"/versions/{checked_version(version)}"
        elif label is not None:
            path += f"/labels/{quote(label, safe='')}"
        return path

    def _signatures(self, model: str, version: int | None, label: str | None) -> dict[str, Any]:
        return self._metadata.fetch(
            (model, version, label), lambda: self.metadata(model, version=version, label=label).signatures
        )

    # -- the API
    def predict(
        self,
        model: str,
        inputs: Any,
        *,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        output_filter: Sequence[str] | None = None,
        timeout: Any = DEFAULT,
    ) -> PredictResult:
        """Like :meth:`ServingClient.predict`, over ``POST .../models/NAME:predict``."""
        # Output dtypes are lost in JSON: the signature is needed even without validation.
        sig = pick_signature(self._signatures(model, version, label), signature, model)
        encoded = predict_inputs(
            inputs,
            sig,
            model,
            signature,
            cast=self.cast,
            output_filter=output_filter,
            check_inputs=self.validate,
        )
        answer = self._post(model, version, label, ":predict", _predict_body(encoded, signature), timeout)
        return _predict_result(answer, sig, output_filter, asked_spec(model, version, signature))

    def classify(
        self,
        model: str,
        examples: Iterable[Any],
        *,
        context: Any = None,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        schema: Any = None,
        timeout: Any = DEFAULT,
    ) -> ClassifyResult:
        """Like :meth:`ServingClient.classify`, over ``POST .../models/NAME:classify``."""
        body = _examples_body(examples, context, schema, signature)
        answer = self._post(model, version, label, ":classify", body, timeout)
        return _classify_result(answer, asked_spec(model, version, signature))

    def regress(
        self,
        model: str,
        examples: Iterable[Any],
        *,
        context: Any = None,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        schema: Any = None,
        timeout: Any = DEFAULT,
    ) -> RegressResult:
        """Like :meth:`ServingClient.regress`, over ``POST .../models/NAME:regress``."""
        body = _examples_body(examples, context, schema, signature)
        answer = self._post(model, version, label, ":regress", body, timeout)
        return _regress_result(answer, asked_spec(model, version, signature))

    def multi_inference(self, model: str, *args: Any, **kwargs: Any) -> MultiInferenceResult:
        """Not in TF Serving's REST API: raises UnimplementedError (use ServingClient)."""
        raise UnimplementedError(
            "TF Serving's REST API has no MultiInference; use ServingClient (gRPC)",
            code="UNIMPLEMENTED",
            model=model,
        )

    def reload_config(self, config: Any, **kwargs: Any) -> None:
        """Not in TF Serving's REST API: raises UnimplementedError (use ServingClient)."""
        raise UnimplementedError(
            "TF Serving's REST API cannot reload the model config; use ServingClient (gRPC)",
            code="UNIMPLEMENTED",
        )

    def metadata(
        self,
        model: str,
        *,
        version: int | None = None,
        label: str | None = None,
        timeout: Any = DEFAULT,
    ) -> ModelMetadata:
        """Like :meth:`ServingClient.metadata`, over ``GET .../models/NAME/metadata``."""
        path = self._model_path(model, version, label) + "/metadata"
        answer = self._request("GET", path, model=model, version=version or label, timeout=timeout)
        return _metadata_result(answer)

    def status(
        self, model: str, *, version: int | None = None, timeout: Any = DEFAULT
    ) -> list[VersionStatus]:
        """Like :meth:`ServingClient.status`, over ``GET .../models/NAME``."""
        answer = self._request(
            "GET", self._model_path(model, version, None), model=model, version=version, timeout=timeout
        )
        return [_version_status(entry) for entry in answer.get("model_version_status", [])]

    def wait_until_available(
        self,
        model: str,
        version: int | None = None,
        *,
        timeout: float = 60.0,
        poll: float = 0.1,
    ) -> VersionStatus:
        """Like :meth:`ServingClient.wait_until_available`."""
        return wait_until_available(self.status, Waiter(model, version, timeout, poll))


def _connection_error(exc: BaseException, context: Mapping[str, Any]) -> ServingCallError:
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return error_from_status("DEADLINE_EXCEEDED", str(reason), **context)
    return error_from_status("UNAVAILABLE", f"cannot connect: {reason}", **context)


def _ssl_context(tls: Any) -> ssl.SSLContext:
    if tls is True:
        return ssl.create_default_context()
    if not isinstance(tls, TLSConfig):
        raise TypeError(f"tls must be True or a TLSConfig for REST, got {tls!r}")
    ca = tls.ca_cert
    if isinstance(ca, bytes):
        context = ssl.create_default_context(cadata=ca.decode("ascii"))
    else:
        context = ssl.create_default_context(cafile=None if ca is None else str(ca))
    if tls.client_cert is not None:
        if isinstance(tls.client_cert, bytes) or isinstance(tls.client_key, bytes):
            raise ValueError("REST mutual TLS needs client_cert and client_key as file paths")
        context.load_cert_chain(str(tls.client_cert), None if tls.client_key is None else str(tls.client_key))
    return context


def _http_error(exc: urllib.error.HTTPError, context: Mapping[str, Any]) -> ServingCallError:
    raw = exc.read()
    try:
        message = str(json.loads(raw).get("error", ""))
    except (ValueError, AttributeError):
        message = raw.decode("utf-8", "replace")[:1024]
    code = CODE_OF_HTTP.get(exc.code, "INTERNAL")
    return error_from_status(code, message or f"HTTP {exc.code}", **context)


def _to_json(array: np.ndarray[Any, Any]) -> Any:
    if array.dtype.kind == "O":
        return _nested_strings(array.tolist())
    if array.dtype.kind == "c":
        raise TypeError("TF Serving's REST API does not accept complex inputs; use gRPC")
    if array.dtype.kind == "f" and array.dtype.itemsize == 2:
        raise TypeError("TF Serving's REST API does not accept half/bfloat16 inputs; use gRPC")
    return array.tolist()


def _nested_strings(value: Any) -> Any:
    if isinstance(value, list):
        return [_nested_strings(v) for v in value]
    if isinstance(value, bytes):
        return text_or_b64(value)
    return value


def _outputs_from_json(value: Any, sig: Any) -> dict[str, np.ndarray[Any, Any]]:
    names = list(sig.outputs)
    if not isinstance(value, dict) or (len(names) == 1 and names[0] not in value):
        value = {names[0]: value}
    return {key: _array(item, sig.outputs.get(key)) for key, item in value.items()}


def _array(value: Any, info: Any) -> np.ndarray[Any, Any]:
    dtype = getattr(info, "dtype", None)
    if dtype == "string":
        decoded = _strings_to_bytes(value)
        array = np.array(decoded, dtype=object)
        return array
    if dtype in (None, "invalid"):
        return np.asarray(value)
    return np.asarray(value, dtype=dtype)


def _strings_to_bytes(value: Any) -> Any:
    if isinstance(value, list):
        return [_strings_to_bytes(v) for v in value]
    if isinstance(value, dict) and "b64" in value:
        return base64.b64decode(value["b64"])
    if isinstance(value, str):
        return value.encode("utf-8")
    return value


# ------------------------------------------------------------ JSON bodies and answers


def _predict_body(encoded: Mapping[str, Any], signature: str | None) -> dict[str, Any]:
    body = {"inputs": {k: _to_json(decode_tensor(t)) for k, t in encoded.items()}}
    return _with_signature(body, signature)


def _predict_result(
    answer: Any, sig: Any, output_filter: Sequence[str] | None, spec: ModelSpec
) -> PredictResult:
    outputs = _outputs_from_json(answer.get("outputs"), sig)
    if output_filter is not None:
        # TF Serving's REST API has no output filter: every output comes back.
        outputs = {k: outputs[k] for k in output_filter if k in outputs}
    return PredictResult(outputs, spec, lambda: answer)


def _classify_result(answer: Any, spec: ModelSpec) -> ClassifyResult:
    classes = [[(str(lbl), float(score)) for lbl, score in row] for row in answer["results"]]
    return ClassifyResult(classes, spec, answer)


def _regress_result(answer: Any, spec: ModelSpec) -> RegressResult:
    values = np.array(answer["results"], dtype=np.float32).reshape(-1)
    return RegressResult(values, spec, answer)


def _metadata_result(answer: Any) -> ModelMetadata:
    from google.protobuf import json_format

    pb = protos()
    sig_map = pb.get_model_metadata_pb2.SignatureDefMap()
    doc = answer.get("metadata", {}).get("signature_def", {})
    json_format.ParseDict(doc, sig_map, ignore_unknown_fields=True)
    spec = json_format.ParseDict(
        answer.get("model_spec", {}), pb.model_pb2.ModelSpec(), ignore_unknown_fields=True
    )
    return ModelMetadata(ModelSpec.from_proto(spec), signature_infos(sig_map.signature_def), answer)


def _version_status(entry: Mapping[str, Any]) -> VersionStatus:
    status = entry.get("status", {})
    state = entry.get("state", "UNKNOWN")
    return VersionStatus(
        version=int(entry.get("version", 0)),
        state=state if state in _STATE else "UNKNOWN",
        error_code=status.get("error_code", "OK"),
        error_message=status.get("error_message", ""),
    )


def _with_signature(body: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature:
        body["signature_name"] = signature
    return body


def _examples_body(
    examples: Iterable[Any], context: Any, schema: Any, signature: str | None
) -> dict[str, Any]:
    records = [_example_json(to_example(e, schema)) for e in examples]
    if not records:
        raise ValueError("give at least one example")
    body: dict[str, Any] = {"examples": records}
    if context is not None:
        body["context"] = _example_json(to_example(context, schema))
    return _with_signature(body, signature)


def _example_json(example: Any) -> dict[str, Any]:
    """A tf.train.Example as TF Serving's REST example object (bytes as {"b64": ...})."""
    out: dict[str, Any] = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind == "float_list":
            out[name] = [float(v) for v in feature.float_list.value]
        elif kind == "int64_list":
            out[name] = [int(v) for v in feature.int64_list.value]
        elif kind == "bytes_list":
            out[name] = [b64_json(v) for v in feature.bytes_list.value]
    return out
