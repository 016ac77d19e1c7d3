"""The Open Inference Protocol (KServe V2) over HTTP, on the REST port beside TF Serving's ``/v1``.

Routes: ``GET /v2`` (server metadata), ``GET /v2/health/live|ready``, ``GET
/v2/models/{name}[/versions/{v}]`` (model metadata; ``?signature_name=`` for another
signature), ``.../ready`` and ``POST .../infer``. Tensors are JSON (``data`` flat or nested)
or, with the binary tensor data extension, raw bytes after a JSON header whose length the
``Inference-Header-Content-Length`` header gives: an input with the ``binary_data_size``
parameter takes that many bytes, in the order of the inputs; an output asked for with
``binary_data`` (or every output, with the request's ``binary_data_output``) is answered so.
Errors are ``{"error": "..."}`` with the HTTP status of their gRPC code.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, unquote

from tfship._wire import (
    V2TensorError,
    array_from_json,
    array_from_raw,
    error_json,
    http_status,
    json_data,
    raw_bytes,
)
from tfship.server._status import RpcError, invalid
from tfship.server._v2 import SIGNATURE_PARAMETER, V2Answer, V2Core, V2Input, tensor_error

logger = logging.getLogger(__name__)

_MODEL = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?(?:/(ready|infer))?")
HEADER_LENGTH = "Inference-Header-Content-Length"
JSON_TYPE = "application/json"
BINARY_TYPE = "application/octet-stream"

Reply = tuple[int, str, bytes, list[str]]  # status, content type, body, extra header lines


class V2Rest:
    """Answers the V2 routes; ``timed`` runs a model call under the REST time limit."""

    def __init__(self, core: V2Core, timed: Callable[[Callable[[], Any]], Any]) -> None:
        self.core = core
        self.timed = timed

    @staticmethod
    def serves(path: str) -> bool:
        """Whether an HTTP request path is one of the protocol's."""
        path = path.split("?", 1)[0]
        return path == "/v2" or path.startswith("/v2/")

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request: (status, content type, body, extra header lines)."""
        try:
            return self._dispatch(method, target, headers, body)
        except RpcError as exc:
            return http_status(exc.code.name), JSON_TYPE, error_json(exc.message), []
        except V2TensorError as exc:
            return 400, JSON_TYPE, error_json(str(exc)), []
        except RecursionError:
            return 400, JSON_TYPE, error_json("the request's JSON is nested too deeply"), []
        except MemoryError:
            return 429, JSON_TYPE, error_json("out of memory serving this request"), []
        except Exception as exc:  # a bug is a 500 with a message, never a dropped connection
            logger.exception("unexpected error while serving %s %s", method, target)
            return 500, JSON_TYPE, error_json(f"{type(exc).__name__}: {exc}"), []

    def _dispatch(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        path, _, query = target.partition("?")
        if method in ("GET", "HEAD"):
            if path == "/v2":
                return _json(self.core.server_metadata())
            if path == "/v2/health/live":
                return _health({"live": True}, "")
            if path == "/v2/health/ready":
                ready = self.core.ready()
                return _health({"ready": ready}, "the server is not ready: a model has no version loaded")
        match = _MODEL.fullmatch(path)
        if match is None:
            return 404, JSON_TYPE, error_json(f"Not found: {method} {path}"), []
        name, version, verb = unquote(match.group(1)), unquote(match.group(2) or ""), match.group(3)
        if verb == "infer":
            if method != "POST":
                return 405, JSON_TYPE, error_json(f"{path} takes POST"), []
            return self._infer(name, version, headers, body)
        if method not in ("GET", "HEAD"):
            return 405, JSON_TYPE, error_json(f"{path} takes GET"), []
        if verb == "ready":
            ready = self.core.model_ready(name, version)
            return _health({"name": name, "ready": ready}, f"model '{name}' is not ready")
        signature = parse_qs(query).get(SIGNATURE_PARAMETER, [None])[-1]
        return _json(self.core.model_metadata(name, version, signature))

    def _infer(self, name: str, version: str, headers: Mapping[str, str], body: bytes) -> Reply:
        header_length = headers.get(HEADER_LENGTH.lower()) or headers.get(HEADER_LENGTH)
        if header_length is not None:
            if not header_length.strip().isdigit() or int(header_length) > len(body):
                raise invalid(f"{HEADER_LENGTH} {header_length!r} is not a length within the body")
            split = int(header_length)
            head, binary = body[:split], memoryview(body)[split:]
        else:
            head, binary = body, memoryview(b"")
        request = _object(_parse(head), "the request")
        parameters = _object(request.get("parameters", {}), "parameters")
        inputs = _inputs(request.get("inputs"), binary)
        outputs, binary_outputs = _requested(request.get("outputs"), parameters)
        answer: V2Answer = self.timed(lambda: self.core.infer(name, version, inputs, outputs, parameters))
        return _answer(answer, request.get("id"), binary_outputs)


def _health(state: dict[str, Any], why: str) -> Reply:
    """The status says it (200 or 400), and the body too, as KServe's servers write it."""
    if state.get("live", state.get("ready")):
        return _json(state)
    return 400, JSON_TYPE, json.dumps({**state, "error": why}).encode("utf-8"), []


def _json(value: Any) -> Reply:
    return 200, JSON_TYPE, json.dumps(value, separators=(",", ":")).encode("utf-8"), []


def _parse(head: bytes | memoryview) -> Any:
    try:
        return json.loads(bytes(head))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid(f"the request is not JSON: {exc}") from None


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(f"{what} must be a JSON object")
    return value


def _inputs(value: Any, binary: memoryview) -> list[V2Input]:
    if not isinstance(value, list) or not value:
        raise invalid("'inputs' must be a non-empty list of tensors")
    inputs: list[V2Input] = []
    at = 0
    for index, item in enumerate(value):
        tensor = _object(item, f"input {index}")
        name, datatype, shape = tensor.get("name"), tensor.get("datatype"), tensor.get("shape")
        if not isinstance(name, str) or not isinstance(datatype, str):
            raise invalid(f"input {index} needs a 'name' and a 'datatype' string")
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape
        ):
            raise invalid(f"input '{name}' needs a 'shape', a list of integers")
        parameters = _object(tensor.get("parameters", {}), f"parameters of input '{name}'")
        size = parameters.get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0 or at + size > len(binary):
                raise invalid(f"input '{name}': binary_data_size {size!r} runs past the binary data")
            array = array_from_raw(bytes(binary[at : at + size]), datatype, shape, name)
            at += size
        elif "data" in tensor:
            array = array_from_json(tensor["data"], datatype, shape, name)
        else:
            raise invalid(f"input '{name}' has neither 'data' nor a binary_data_size parameter")
        inputs.append(V2Input(name, datatype, array))
    if at != len(binary):
        raise invalid(f"{len(binary) - at} bytes of binary data follow the last input's")
    return inputs


def _requested(value: Any, parameters: Mapping[str, Any]) -> tuple[list[str] | None, set[str] | bool]:
    """The outputs asked for (None: all), and which of them are answered as binary data (a
    set of names, or True for all)."""
    every = parameters.get("binary_data_output") is True
    if value is None:
        return None, every
    if not isinstance(value, list):
        raise invalid("'outputs' must be a list")
    names: list[str] = []
    binary: set[str] = set()
    for index, item in enumerate(value):
        output = _object(item, f"output {index}")
        name = output.get("name")
        if not isinstance(name, str):
            raise invalid(f"output {index} needs a 'name' string")
        names.append(name)
        flag = _object(output.get("parameters", {}), f"parameters of output '{name}'").get("binary_data")
        if flag is True or (flag is None and every):
            binary.add(name)
    return names, binary


def _answer(answer: V2Answer, request_id: Any, binary: set[str] | bool) -> Reply:
    outputs: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for output in answer.outputs:
        entry: dict[str, Any] = {
            "name": output.name,
            "datatype": output.datatype,
            "shape": list(output.value.shape),
        }
        if binary is True or (isinstance(binary, set) and output.name in binary):
            data = raw_bytes(output.value)
            entry["parameters"] = {"binary_data_size": len(data)}
            blobs.append(data)
        else:
            try:
                entry["data"] = json_data(output.value, output.datatype, output.name)
            except V2TensorError as exc:
                raise tensor_error(exc) from None
        outputs.append(entry)
    document: dict[str, Any] = {"model_name": answer.model, "model_version": answer.version}
    if request_id is not None:
        document["id"] = request_id
    document["parameters"] = {SIGNATURE_PARAMETER: answer.signature}
    document["outputs"] = outputs
    head = json.dumps(document, separators=(",", ":")).encode("utf-8")
    if not blobs:
        return 200, JSON_TYPE, head, []
    return 200, BINARY_TYPE, head + b"".join(blobs), [f"{HEADER_LENGTH}: {len(head)}"]
