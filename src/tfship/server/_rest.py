"""The REST face of the local server: TF Serving's ``/v1/models/...`` routes and JSON rules.

Like ``http_rest_api_handler.cc`` and ``json_tensor.cc``: a JSON body becomes the same request
message a gRPC client would send (typed tensors built from the signature's dtypes, Examples for
classify/regress), runs through the same ``ServingCore``, and the response is written back as
JSON (``predictions``/``outputs``/``results``). Errors are ``{ "error": "..." }`` with TF
Serving's HTTP status for the code.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import grpc
import numpy as np

from tfship._wire import DEFAULT_SIGNATURE, DT_STRING, http_status, rest_error_body
from tfship._wire import decode_tensor as to_ndarray
from tfship._wire import tf_dtype_name as dtype_name
from tfship.server._core import ServingCore
from tfship.server._metrics import handle_counted
from tfship.server._status import LocalServerError, RpcError, invalid

logger = logging.getLogger(__name__)

_VERSION = r"(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?"
_PREDICT = re.compile(r"/v1/models/([^/:]+)" + _VERSION + r":(classify|regress|predict)", re.I)
_STATUS = re.compile(r"/v1/models(?:/([^/:]+))?" + _VERSION + r"(?:/(metadata))?", re.I)


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_UINT32 = (0, 2**32 - 1)
_UINT64 = (0, 2**64 - 1)
_FLOAT_MAX = float(np.finfo(np.float32).max)


def error_body(message: str) -> bytes:
    """The exact bytes of TF Serving's REST error body (valid JSON, escaped as it escapes)."""
    return rest_error_body(message)


# JSON -> requests ----------------------------------------------------------------------------
def _json_text(value: Any) -> str:
    # JsonValueToString: rapidjson's PrettyWriter, 4-space indents
    return json.dumps(value, indent=4, ensure_ascii=False)


def _json_type(value: Any) -> str:
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def parse_json(body: bytes) -> dict[str, Any]:
    """Parse a request body as rapidjson does (NaN/Infinity allowed; must be an object)."""
    if not body:
        raise invalid("JSON Parse error: The document is empty")
    try:
        doc = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        message = f"JSON Parse error: Invalid encoding in string. at offset: {exc.start}"
        raise invalid(message) from None
    except json.JSONDecodeError as exc:
        raise invalid(f"JSON Parse error: {_rapidjson_text(exc)} at offset: {exc.pos}") from None
    if not isinstance(doc, dict):
        raise invalid(f"JSON Value: {_json_text(doc)} Is not object")
    return doc


# Python's json messages -> rapidjson's GetParseError_En texts, which TF Serving returns.
_PARSE_ERRORS = {
    "Expecting value": "Invalid value.",
    "Expecting property name enclosed in double quotes": "Missing a name for object member.",
    "Expecting ':' delimiter": "Missing a colon after a name of object member.",
    "Unterminated string starting at": "Missing a closing quotation mark in string.",
    "Extra data": "The document root must not be followed by other values.",
    "Invalid \\escape": "Invalid escape character in string.",
    "Invalid control character at": "Invalid encoding in string.",
}


def _rapidjson_text(exc: json.JSONDecodeError) -> str:
    if exc.msg == "Expecting ',' delimiter":
        # rapidjson tells objects from arrays; find the innermost one still open
        depth: list[str] = []
        for char in exc.doc[: exc.pos]:
            if char in "[{":
                depth.append(char)
            elif char in "]}" and depth:
                depth.pop()
        if depth and depth[-1] == "[":
            return "Missing a comma or ']' after an array element."
        return "Missing a comma or '}' after an object member."
    return _PARSE_ERRORS.get(exc.msg, exc.msg)


def _fill_signature(doc: Mapping[str, Any], spec: Any) -> None:
    if "signature_name" in doc:
        if not isinstance(doc["signature_name"], str):
            raise invalid(
                f"JSON Value: {_json_text(doc)} not formatted correctly. 'signature_name' key "
                "must be a string value."
            )
        spec.signature_name = doc["signature_name"]


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def _b64decode(value: Any) -> bytes:
    if not _is_b64(value):
        raise invalid(f"JSON Value: {_json_text(value)} not formatted correctly for base64 data")
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, ValueError):
        raise invalid("Unable to base64 decode") from None


def _type_error(value: Any, dtype: int) -> RpcError:
    return invalid(
        f"JSON Value: {_json_text(value)} Type: {_json_type(value)} is not of expected type: "
        + dtype_name(dtype)
    )


def _lossless(value: Any, digits: int, largest: float) -> bool:
    if isinstance(value, int):
        return abs(value) <= (1 << digits) - 1
    if not math.isfinite(value):
        return True
    return bool(-largest <= value <= largest)


def _add_value(value: Any, dtype: int, proto: Any) -> None:
    """json_tensor.cc's AddValueToTensor: one JSON scalar into the typed field of ``dtype``."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if dtype in (1, 2):  # float, double
        if not is_number:
            raise _type_error(value, dtype)
        digits, largest, name = (24, _FLOAT_MAX, "float") if dtype == 1 else (53, 1.8e308, "double")
        if not _lossless(value, digits, largest):
            raise invalid(
                f"Cannot convert JSON value: {_json_text(value)} to {name} without loss of "
                "precision."
            )
        (proto.float_val if dtype == 1 else proto.double_val).append(float(value))
    elif dtype in (3, 4, 5, 6):  # int32, uint8, int16, int8 travel in int_val
        if not (is_int and _INT32[0] <= value <= _INT32[1]):
            raise _type_error(value, dtype)
        proto.int_val.append(value)
    elif dtype == DT_STRING:
        if not isinstance(value, str):
            raise _type_error(value, dtype)
        proto.string_val.append(value.encode("utf-8"))
    elif dtype == 9:
        if not (is_int and _INT64[0] <= value <= _INT64[1]):
            raise _type_error(value, dtype)
        proto.int64_val.append(value)
    elif dtype == 10:
        if not isinstance(value, bool):
            raise _type_error(value, dtype)
        proto.bool_val.append(value)
    elif dtype in (22, 23):
        bounds = _UINT32 if dtype == 22 else _UINT64
        if not (is_int and bounds[0] <= value <= bounds[1]):
            raise _type_error(value, dtype)
        (proto.uint32_val if dtype == 22 else proto.uint64_val).append(value)
    else:
        raise RpcError(
            grpc.StatusCode.UNIMPLEMENTED,
            f"Conversion of JSON Value: {_json_text(value)} to type: {dtype_name(dtype)}",
        )


def _dense_shape(value: Any) -> list[int]:
    shape: list[int] = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _fill_tensor(value: Any, level: int, dtype: int, proto: Any, shape: list[int]) -> int:
    """json_tensor.cc's FillTensorProto; returns the number of values added."""
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise invalid(
                f"JSON Value: {_json_text(value)} found at incorrect level: {level + 1} in the "
                f"JSON DOM. Expected at level: {rank}"
            )
        if isinstance(value, dict):
            if dtype != DT_STRING:
                raise _type_error(value, dtype)
            proto.string_val.append(_b64decode(value))
        else:
            _add_value(value, dtype, proto)
        return 1
    if level >= rank:
        raise invalid(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise invalid(
            f"Encountered list at unexpected size: {len(value)} at level: {level} expected "
            f"size: {shape[level]}"
        )
    return sum(_fill_tensor(v, level + 1, dtype, proto, shape) for v in value)


def _tensor_from_json(value: Any, dtype: int, proto_cls: Any) -> tuple[Any, list[int], int]:
    proto = proto_cls(dtype=dtype)
    shape = _dense_shape(value)
    count = _fill_tensor(value, 0, dtype, proto, shape)
    return proto, shape, count


def _status_text(error: RpcError) -> str:
    # Status::ToString, embedded in the "Failed to process element" messages
    return f"{error.code.name}: {error.message}"


def _instances(items: list[Any], infos: Mapping[str, Any], request: Any) -> None:
    """json_tensor.cc's FillTensorMapFromInstancesList (row format)."""
    from tensorflow.core.framework import tensor_pb2

    if not isinstance(items[0], dict) and len(infos) > 1:
        raise invalid(
            "instances is a plain list, but expecting list of objects as multiple input tensors "
            "required as per tensorinfo_map"
        )
    as_objects = isinstance(items[0], dict) and not _is_b64(items[0])
    names = sorted(infos)
    parts: dict[str, list[Any]] = {}
    shapes: dict[str, tuple[list[int], int]] = {}
    for index, item in enumerate(items):
        if as_objects:
            if not (isinstance(item, dict) and not _is_b64(item)):
                raise invalid(f"Expecting object but got list at item {index} of input list")
            for key, value in item.items():
                try:
                    _instance_item(value, key, infos, parts, shapes, tensor_pb2.TensorProto)
                except RpcError as exc:
                    raise invalid(
                        f"Failed to process element: {index} key: {key} of 'instances' list. "
                        f"Error: {_status_text(exc)}"
                    ) from None
            if sorted(item) != names:
                raise invalid(
                    f"Failed to process element: {index} of 'instances' list. JSON object: "
                    f"{_json_text(item)} keys must be equal to: {','.join(names)}"
                )
        else:
            if isinstance(item, dict) and not _is_b64(item):
                raise invalid(f"Expecting value/list but got object at item {index} of input list")
            try:
                _instance_item(item, names[0], infos, parts, shapes, tensor_pb2.TensorProto)
            except RpcError as exc:
                raise invalid(
                    f"Failed to process element: {index} of 'instances' list. Error: "
                    + _status_text(exc)
                ) from None
    for name, protos in parts.items():
        merged = request.inputs[name]
        merged.dtype = int(infos[name].dtype)
        for proto in protos:
            merged.MergeFrom(proto)
        merged.tensor_shape.Clear()
        for size in [len(items), *shapes[name][0]]:
            merged.tensor_shape.dim.add().size = size


def _instance_item(
    value: Any,
    name: str,
    infos: Mapping[str, Any],
    parts: dict[str, list[Any]],
    shapes: dict[str, tuple[list[int], int]],
    proto_cls: Any,
) -> None:
    if name not in infos:
        raise invalid(f"JSON object: does not have named input: {name}")
    proto, shape, count = _tensor_from_json(value, int(infos[name].dtype), proto_cls)
    proto.ClearField("tensor_shape")
    if name not in shapes:
        shapes[name] = (shape, count)
    elif shapes[name][1] != count:
        raise invalid(f"Expecting tensor size: {shapes[name][1]} but got: {count}")
    elif shapes[name][0] != shape:
        raise invalid(
            f"Expecting shape [{','.join(map(str, shapes[name][0]))}] but got: "
            f"[{','.join(map(str, shape))}]"
        )
    parts.setdefault(name, []).append(proto)


def _columns(value: Any, infos: Mapping[str, Any], request: Any) -> None:
    """json_tensor.cc's FillTensorMapFromInputsMap (columnar format)."""
    from tensorflow.core.framework import tensor_pb2

    names = sorted(infos)
    if not isinstance(value, dict) or _is_b64(value):
        if len(infos) > 1:
            raise invalid(
                "inputs is a plain value/list, but expecting an object as multiple input tensors "
                "required as per tensorinfo_map"
            )
        selected = {names[0]: value}
    else:
        selected = {}
        for name in names:
            if name not in value:
                raise invalid(f"Missing named input: {name} in 'inputs' object.")
            selected[name] = value[name]
    for name, item in selected.items():
        proto, shape, _ = _tensor_from_json(item, int(infos[name].dtype), tensor_pb2.TensorProto)
        for size in shape:
            proto.tensor_shape.dim.add().size = size
        request.inputs[name].CopyFrom(proto)


def predict_request_from_json(
    body: bytes, spec_fill: Any, core: ServingCore
) -> tuple[Any, str]:
    """Build a PredictRequest from a REST body; returns it and the format ("row"/"columnar")."""
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    spec_fill(request.model_spec)
    doc = parse_json(body)
    _fill_signature(doc, request.model_spec)
    key = request.model_spec.signature_name or DEFAULT_SIGNATURE
    with core.manager.servable(request.model_spec) as servable:
        signature = servable.signatures.get(key)
        if signature is None:
            raise invalid(f'Serving signature name: "{key}" not found in signature def')
        infos = dict(signature.inputs)
    if not infos:
        raise invalid(
            "Failed to get input map for signature: "
            + (request.model_spec.signature_name or "DEFAULT")
        )
    if "instances" in doc:
        if "inputs" in doc:
            raise invalid(
                f"JSON Value: {_json_text(doc)} Not formatted correctly expecting only one of "
                "'inputs' or 'instances' keys to exist "
            )
        if not isinstance(doc["instances"], list):
            raise invalid(f"JSON Value: {_json_text(doc)} Excepting 'instances' to be an list/array")
        if not doc["instances"]:
            raise invalid(f"JSON Value: {_json_text(doc)} No values in 'instances' array")
        _instances(doc["instances"], infos, request)
        return request, "row"
    if "inputs" in doc:
        _columns(doc["inputs"], infos, request)
        return request, "columnar"
    raise invalid("Missing 'inputs' or 'instances' key")


def _feature_kind_error(name: str, kind: str) -> RpcError:
    return invalid(f"Unexpected element type in feature: {name} expecting type: {kind}")


def _add_feature_value(value: Any, name: str, feature: Any) -> None:
    kind = feature.WhichOneof("kind")
    shown = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}

    def want(expected: str) -> None:
        if kind not in (None, expected):
            raise _feature_kind_error(name, shown[kind])

    if value is None or isinstance(value, list) or (isinstance(value, dict) and not _is_b64(value)):
        raise invalid(
            f"Feature: {name} has element with unexpected JSON type: {_json_type(value)}"
        )
    if isinstance(value, bool):
        want("int64_list")
        feature.int64_list.value.append(int(value))
    elif isinstance(value, dict):
        want("bytes_list")
        feature.bytes_list.value.append(_b64decode(value))
    elif isinstance(value, str):
        want("bytes_list")
        feature.bytes_list.value.append(value.encode("utf-8"))
    elif isinstance(value, float):
        want("float_list")
        if not _lossless(value, 24, _FLOAT_MAX):
            raise invalid(
                f"Cannot convert JSON value: {_json_text(value)} to float without loss of "
                "precision."
            )
        feature.float_list.value.append(value)
    else:
        want("int64_list")
        if value > _INT64[1]:
            raise invalid(f"Feature: {name} has uint64 element. Only int64 is supported.")
        feature.int64_list.value.append(value)


def _example_from_json(value: Any, example: Any) -> None:
    if not isinstance(value, dict):
        raise invalid(f"Example must be JSON object but got JSON {_json_type(value)}")
    for name, content in value.items():
        feature = example.features.feature[name]
        feature.Clear()
        for item in content if isinstance(content, list) else [content]:
            _add_feature_value(item, name, feature)


def examples_request_from_json(body: bytes, request: Any) -> None:
    """Fill a Classification/RegressionRequest's input from a REST body."""
    doc = parse_json(body)
    _fill_signature(doc, request.model_spec)
    with_context = "context" in doc
    if with_context:
        _example_from_json(doc["context"], request.input.example_list_with_context.context)
    if "examples" not in doc:
        raise invalid(
            f"JSON Value: {_json_text(doc)} When method is classify, key 'examples' is expected "
            "and was not found"
        )
    if not isinstance(doc["examples"], list):
        raise invalid(f"JSON Value: {_json_text(doc)} Expecting 'examples' value to be an list/array")
    if not doc["examples"]:
        raise invalid(f"JSON Value: {_json_text(doc)} 'examples' value is an empty array")
    for item in doc["examples"]:
        target = (
            request.input.example_list_with_context.examples.add()
            if with_context
            else request.input.example_list.examples.add()
        )
        _example_from_json(item, target)


# responses -> JSON ---------------------------------------------------------------------------
def format_decimal(value: float, single: bool) -> str:
    """json_tensor.cc's WriteDecimal: ``%g`` if it round-trips, else full precision; ".0" on
    whole numbers written without an exponent; NaN/Infinity spelled as JavaScript does."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    cast = np.float32 if single else np.float64
    value = float(cast(value))
    text = f"{value:g}"
    if cast(float(text)) != cast(value):
        text = f"{value:.{9 if single else 17}g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _json_value(value: Any, dtype: int, as_bytes: bool) -> Any:
    if dtype == DT_STRING:
        raw = value if isinstance(value, bytes) else str(value).encode()
        if as_bytes:
            return {"b64": base64.b64encode(raw).decode("ascii")}
        return raw.decode("utf-8", errors="replace")
    if dtype in (1, 2, 19, 14):
        return _Raw(format_decimal(float(value), dtype != 2))
    if dtype == 10:
        return bool(value)
    return int(value)


class _Raw:
    """A number already formatted as TF Serving writes it."""

    def __init__(self, text: str) -> None:
        self.text = text


def _nested(array: Any, dtype: int, as_bytes: bool) -> Any:
    if not isinstance(array, np.ndarray):  # one element of an object (string) array
        return _json_value(array, dtype, as_bytes)
    if array.ndim == 0:
        return _json_value(array.item() if dtype != DT_STRING else array[()], dtype, as_bytes)
    return [_nested(row, dtype, as_bytes) for row in array]


def dumps(value: Any) -> str:
    """JSON text where ``_Raw`` numbers are written verbatim (NaN, Infinity, 1.0)."""
    if isinstance(value, _Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def predict_response_json(outputs: Mapping[str, Any], form: str) -> str:
    """MakeJsonFromTensors: ``{"predictions": ...}`` (row) or ``{"outputs": ...}`` (columnar)."""
    if not outputs:
        raise invalid("Cannot convert empty tensor map to JSON")
    arrays = {name: (to_ndarray(proto), int(proto.dtype)) for name, proto in sorted(outputs.items())}
    if form == "columnar":
        values = {
            name: _nested(array, dtype, _is_bytes(name, dtype))
            for name, (array, dtype) in arrays.items()
        }
        body = next(iter(values.values())) if len(values) == 1 else values
        return dumps({"outputs": body})
    batch = -1
    for name, (array, _) in arrays.items():
        if array.ndim == 0:
            raise invalid(f"Tensor name: {name} has no shape information ")
        if batch >= 0 and array.shape[0] != batch:
            raise invalid(
                f"Tensor name: {name} has inconsistent batch size: {array.shape[0]} expecting: "
                f"{batch}"
            )
        batch = array.shape[0]
    rows: list[Any] = []
    for index in range(batch):
        row = {
            name: _nested(array[index], dtype, _is_bytes(name, dtype))
            for name, (array, dtype) in arrays.items()
        }
        rows.append(next(iter(row.values())) if len(row) == 1 else row)
    return dumps({"predictions": rows})


def _is_bytes(name: str, dtype: int) -> bool:
    return dtype == DT_STRING and name.endswith("_bytes")


def classification_json(result: Any) -> str:
    """MakeJsonFromClassificationResult: ``{"results": [[[label, score], ...], ...]}``."""
    if not result.classifications:
        raise invalid("Cannot convert empty ClassificationResults to JSON")
    rows = [
        [[c.label, _Raw(format_decimal(c.score, True))] for c in item.classes]
        for item in result.classifications
    ]
    return dumps({"results": rows})


def regression_json(result: Any) -> str:
    """MakeJsonFromRegressionResult: ``{"results": [value, ...]}``."""
    if not result.regressions:
        raise invalid("Cannot convert empty RegressionResults to JSON")
    return dumps({"results": [_Raw(format_decimal(r.value, True)) for r in result.regressions]})


def _proto_json(message: Any) -> str:
    from google.protobuf import json_format

    text: str = json_format.MessageToJson(
        message, including_default_value_fields=True, preserving_proto_field_name=True, indent=2
    )
    return text


# routing -------------------------------------------------------------------------------------
class RestApi:
    """Route one HTTP request to the core and produce (status, body).

    Model runs are bounded by ``timeout_s`` (TF Serving's ``--rest_api_timeout_in_ms``, 30 s):
    past it the caller gets 504 DEADLINE_EXCEEDED (the run itself finishes in the background).
    """

    def __init__(self, core: ServingCore, timeout_s: float | None = 30.0) -> None:
        self.core = core
        self.timeout_s = timeout_s
        self._pool = (
            None if timeout_s is None
            else ThreadPoolExecutor(max_workers=64, thread_name_prefix="tfship-rest-run")
        )

    def close(self) -> None:
        """Release the threads that run requests (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _timed(self, call: Callable[[], Any]) -> Any:
        if self._pool is None:
            return call()
        future = self._pool.submit(call)
        try:
            return future.result(timeout=self.timeout_s)
        except FutureTimeout:
            # TensorFlow's text when a run outlives RunOptions.timeout_in_ms
            raise RpcError(
                grpc.StatusCode.DEADLINE_EXCEEDED, "Timed out waiting for notification"
            ) from None

    def handle(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        """Answer ``method path`` with TF Serving's status code and JSON body."""
        try:
            return 200, self._dispatch(method, path, body).encode("utf-8")
        except RpcError as exc:
            return http_status(exc.code.name), error_body(exc.wire_message())
        except RecursionError:
            return 400, error_body("JSON Parse error: document nested too deeply")
        except MemoryError:
            return 429, error_body("out of memory serving this request")
        except Exception as exc:  # a bug is a 500 with a message, never a dropped connection
            logger.exception("unexpected error while serving %s %s", method, path)
            return 500, error_body(f"{type(exc).__name__}: {exc}")

    def _dispatch(self, method: str, path: str, body: bytes) -> str:
        path = path.split("?", 1)[0]
        match = _PREDICT.fullmatch(path)
        if method == "POST" and match:
            name, version, label, verb = match.groups()
            return self._run(verb.lower(), _spec_filler(name, version, label), body)
        match = _STATUS.fullmatch(path)
        if method == "GET" and match:
            name, version, label, metadata = match.groups()
            if not name:
                raise invalid("Missing model name in request.")
            if metadata:
                return self._metadata(_spec_filler(name, version, label))
            return self._status(unquote(name), version)
        raise invalid(f"Malformed request: {method} {path}")

    def _run(self, verb: str, fill: Any, body: bytes) -> str:
        from tensorflow_serving.apis import classification_pb2, regression_pb2

        if verb == "predict":
            request, form = predict_request_from_json(body, fill, self.core)
            outputs = self._timed(lambda: self.core.predict(request).outputs)
            return predict_response_json(outputs, form)
        if verb == "classify":
            creq = classification_pb2.ClassificationRequest()
            fill(creq.model_spec)
            examples_request_from_json(body, creq)
            return classification_json(self._timed(lambda: self.core.classify(creq).result))
        rreq = regression_pb2.RegressionRequest()
        fill(rreq.model_spec)
        examples_request_from_json(body, rreq)
        return regression_json(self._timed(lambda: self.core.regress(rreq).result))

    def _status(self, name: str, version: str | None) -> str:
        from tensorflow_serving.apis import get_model_status_pb2

        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = name
        if version is not None:
            request.model_spec.version.value = _version_number(version)
        return _proto_json(self.core.get_model_status(request))

    def _metadata(self, fill: Any) -> str:
        from tensorflow_serving.apis import get_model_metadata_pb2

        request = get_model_metadata_pb2.GetModelMetadataRequest()
        fill(request.model_spec)
        request.metadata_field.append("signature_def")
        response = self.core.get_model_metadata(request)
        signature_map = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signature_map)
        return (
            '{\n"model_spec":' + _proto_json(response.model_spec) + ',\n"metadata": {'
            '"signature_def": ' + _proto_json(signature_map) + "\n}\n}\n"
        )


def _version_number(text: str) -> int:
    number = int(text)
    if number > _INT64[1]:
        raise invalid(f"Failed to convert version: {text} to numeric.")
    return number


def _spec_filler(name: str, version: str | None, label: str | None) -> Any:
    def fill(spec: Any) -> None:
        spec.name = unquote(name)
        if version is not None:
            spec.version.value = _version_number(version)
        elif label is not None:
            spec.version_label = unquote(label)

    return fill


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as TF Serving's HTTP server allows
    api: RestApi
    server_version = "tfship"

    def do_GET(self) -> None:  # noqa: N802 - http.server names
        self._answer("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._answer("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._answer("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._answer("DELETE")

    def _answer(self, method: str) -> None:
        body = self._body()
        metrics = self.api.core.metrics  # --monitoring_config_file's Prometheus page
        if method == "GET" and metrics is not None and metrics.serves(self.path):
            status, payload, content_type = 200, metrics.page(), metrics.content_type
        elif not self.path.lower().startswith("/v1/"):
            status, payload = 404, b"<h1>404 Not Found</h1>"
            content_type = "text/html"
        else:
            status, payload = handle_counted(self.api.handle, metrics, method, self.path, body)
            content_type = "application/json"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if not length or not length.isdigit():
            return b""
        return self.rfile.read(int(length))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        logger.debug("rest: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 128
    api: RestApi

    def server_close(self) -> None:
        super().server_close()
        self.api.close()


def start_rest(
    core: ServingCore, host: str, port: int, *, timeout_s: float | None = 30.0
) -> tuple[Any, int]:
    """Start the REST API in a background thread; returns the server and its bound port.

    Raises:
        LocalServerError: when the address cannot be bound.
    """
    api = RestApi(core, timeout_s)
    handler = type("Handler", (_Handler,), {"api": api})
    try:
        server = _Server((host, port), handler)
    except OSError as exc:
        api.close()
        raise LocalServerError(f"cannot bind REST to {host}:{port}: {exc.strerror}") from exc
    server.api = api
    thread = threading.Thread(target=server.serve_forever, name="tfship-rest", daemon=True)
    thread.start()
    return server, int(server.server_address[1])
