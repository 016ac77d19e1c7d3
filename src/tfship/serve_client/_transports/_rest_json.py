"""TF Serving's REST calls as JSON: request messages to (HTTP method, path, JSON body), and
JSON answers back to the response messages the gRPC transport returns.

Differences that come from REST itself are made up here: answers carry no ``model_spec`` (the
servable asked for is reported, :func:`asked_spec`), ``output_filter`` is applied to the
answer, output dtypes (lost in JSON) come from the signature the client passes along, and a
Predict of zero rows, which JSON cannot shape, is answered without the server
(:func:`empty_batch_answer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

import numpy as np

from tfship._wire import (
    DEFAULT_SIGNATURE,
    ClassificationResponse,
    Example,
    GetModelMetadataResponse,
    GetModelStatusResponse,
    Input,
    JsonError,
    ModelSpecProto,
    RegressionResponse,
    answer_from_json,
    decode_tensor,
    example_to_json,
    protos,
    tensor_to_json,
)
from tfship.serve_client._errors import InvalidInputError, MalformedResponseError
from tfship.serve_client._options import CHECK_EVERY, DeadlineCheck
from tfship.serve_client._results import PredictOutputs
from tfship.serve_client._transports._base import Call

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from tfship.inspect import SignatureInfo, TensorInfo

__all__ = ["EmptyBatch", "asked_spec", "empty_batch_answer", "model_path", "rest_answer", "rest_request"]

_VERBS = {"Predict": ":predict", "Classify": ":classify", "Regress": ":regress"}


# ------------------------------------------------------------- requests to JSON bodies


def rest_request(
    method: str, request: Message, inputs: Mapping[str, Any] | None = None, check: DeadlineCheck | None = None
) -> tuple[str, str, dict[str, Any] | None]:
    """(HTTP method, path, JSON body) of TF Serving's REST call for a request message (a
    Predict's ``inputs`` as arrays, when the request does not hold them); ``check`` is called
    now and then while examples are written (it raises once the call's deadline passed).

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
        arrays = inputs if inputs is not None else {k: decode_tensor(t) for k, t in request.inputs.items()}
        body = {"inputs": {k: _json_tensor(a) for k, a in arrays.items()}}
    else:
        body = _examples_body(request.input, check)
    if request.model_spec.signature_name:
        body["signature_name"] = request.model_spec.signature_name
    return "POST", path + _VERBS[method], body


class EmptyBatch(Exception):
    """A Predict input has no rows: JSON writes ``[]`` for any such shape, and TF Serving
    would read a tensor of shape ``[0]``."""


def _json_tensor(array: np.ndarray[Any, Any]) -> Any:
    """A request tensor for the body: numeric arrays stay arrays (written by orjson in C),
    strings become text or ``{"b64": ...}``; an empty tensor JSON cannot shape is refused."""
    if 0 in array.shape[:-1]:
        raise EmptyBatch()
    kind = array.dtype.kind
    if kind in "biu" or (kind == "f" and array.dtype.itemsize >= 4):
        # a scalar stays a scalar (numpy's, so float32 keeps its shortest text)
        return array[()] if array.ndim == 0 else np.ascontiguousarray(array)
    return tensor_to_json(array)


def empty_batch_answer(call: Call) -> PredictOutputs:
    """The answer to a Predict of zero rows, which REST cannot send: every output with zero
    rows, as TF Serving answers it over gRPC, shaped by the signature (``[?, 3]`` -> ``(0, 3)``).

    Raises:
        InvalidInputError: an output's shape beyond its rows is unknown, so the answer is too.
    """
    where = f"Predict model {call.model!r}"
    if call.inputs is not None:
        shapes = {key: tuple(np.shape(a)) for key, a in call.inputs.items()}
    else:
        shapes = {key: tuple(d.size for d in t.tensor_shape.dim) for key, t in call.request.inputs.items()}
    sig = call.signature
    if sig is None or any(shape[:1] != (0,) for shape in shapes.values()):
        raise InvalidInputError(
            f"{where}: inputs {shapes} hold no values, and REST cannot send their shapes (JSON "
            "writes [] for all of them); send at least one row, or call over gRPC",
            model=call.model,
        )
    wanted = list(call.request.output_filter) or list(sig.outputs)
    outputs = {}
    for key in wanted:
        info = sig.outputs[key]
        shape = info.shape
        if (
            shape is None
            or not shape
            or shape[0] not in (None, -1)
            or any(d is None or d < 0 for d in shape[1:])
        ):
            raise InvalidInputError(
                f"{where}: an empty batch cannot be sent over REST (JSON keeps no shape for "
                f"{shapes}) and output {key!r} of shape {list(shape or [])} cannot be answered "
                "without the server; send at least one row, or call over gRPC",
                model=call.model,
            )
        rest = cast("tuple[int, ...]", shape[1:])  # none unknown: checked above
        outputs[key] = np.zeros((0, *rest), dtype=_numpy_dtype(info.dtype))
    return PredictOutputs(outputs, asked_spec(call.request.model_spec), {"outputs": {}})


def _numpy_dtype(name: str) -> type[object] | np.dtype[Any]:
    return object if name == "string" else np.dtype(name)


def model_path(spec: ModelSpecProto) -> str:
    """``/v1/models/NAME[/versions/N | /labels/LABEL]`` for a ``ModelSpec``."""
    version = spec.version.value if spec.HasField("version") else None
    key = (spec.name, version, spec.version_label)
    path = _PATHS.get(key)
    if path is None:
        path = f"/v1/models/{quote(spec.name, safe='')}"
        if version is not None:
            path += f"/versions/{version}"
        elif spec.version_label:
            path += f"/labels/{quote(spec.version_label, safe='')}"
        if len(_PATHS) < 1024:  # names, versions and labels a process calls: few
            _PATHS[key] = path
    return path


_PATHS: dict[tuple[str, int | None, str], str] = {}


def _examples_body(input_message: Input, check: DeadlineCheck | None = None) -> dict[str, Any]:
    kind = input_message.WhichOneof("kind")
    if kind == "example_list_with_context":
        listed = input_message.example_list_with_context
        return {
            "examples": _examples_json(listed.examples, check),
            "context": example_to_json(listed.context),
        }
    return {"examples": _examples_json(input_message.example_list.examples, check)}


def _examples_json(examples: Sequence[Example], check: DeadlineCheck | None) -> list[Any]:
    """Each Example as its JSON object; ``check`` every ``CHECK_EVERY`` examples."""
    if check is None:
        return [example_to_json(e) for e in examples]
    written = []
    for number, example in enumerate(examples):
        if number % CHECK_EVERY == 0:
            check("while the request was written as JSON")
        written.append(example_to_json(example))
    return written


# ------------------------------------------------------------ JSON answers to responses


def rest_answer(call: Call, doc: Any, bool_free: bool = False) -> Any:
    """The response message (Predict: ``PredictOutputs``) for a JSON answer to ``call``;
    ``bool_free``: the body holds no ``true``/``false``, so numbers may be read in one step."""
    if call.method == "GetModelStatus":
        return _status_response(doc)
    if call.method == "GetModelMetadata":
        return _metadata_response(doc)
    spec = asked_spec(call.request.model_spec)
    if call.method == "Predict":
        outputs = _outputs_from_json(doc.get("outputs"), call.signature, bool_free)
        wanted = list(call.request.output_filter)
        if wanted:  # TF Serving's REST API has no output filter: every output comes back
            outputs = {k: outputs[k] for k in wanted if k in outputs}
        return PredictOutputs(outputs, spec, doc)
    if call.method == "Classify":
        return _classify_response(doc, spec)
    return _regress_response(doc, spec)


def asked_spec(spec: ModelSpecProto) -> ModelSpecProto:
    """The servable asked for, standing in for the ``model_spec`` REST answers lack."""
    answered = protos().model_pb2.ModelSpec()
    answered.CopyFrom(spec)
    answered.signature_name = spec.signature_name or DEFAULT_SIGNATURE
    return answered


def _status_response(doc: Any) -> GetModelStatusResponse:
    from google.protobuf import json_format

    response = protos().get_model_status_pb2.GetModelStatusResponse()
    json_format.ParseDict(doc, response, ignore_unknown_fields=True)
    return response


def _metadata_response(doc: Any) -> GetModelMetadataResponse:
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


def _classify_response(doc: Any, spec: ModelSpecProto) -> ClassificationResponse:
    response = protos().classification_pb2.ClassificationResponse()
    response.model_spec.CopyFrom(spec)
    for row in doc["results"]:
        classes = response.result.classifications.add().classes
        for label, score in row:
            classes.add(label=str(label), score=float(score))
    return response


def _regress_response(doc: Any, spec: ModelSpecProto) -> RegressionResponse:
    response = protos().regression_pb2.RegressionResponse()
    response.model_spec.CopyFrom(spec)
    for value in np.asarray(doc["results"], dtype=np.float64).reshape(-1):
        response.result.regressions.add(value=float(value))
    return response


def _outputs_from_json(
    value: Any, sig: SignatureInfo | None, bool_free: bool
) -> dict[str, np.ndarray[Any, Any]]:
    names = [] if sig is None else list(sig.outputs)
    if not isinstance(value, dict) or (len(names) == 1 and names[0] not in value):
        value = {names[0] if names else "outputs": value}
    table = {} if sig is None else sig.outputs
    return {key: _array(item, table.get(key), bool_free) for key, item in value.items()}


def _array(value: Any, info: TensorInfo | None, bool_free: bool) -> np.ndarray[Any, Any]:
    try:
        return answer_from_json(value, getattr(info, "dtype", None), bool_free)
    except JsonError as exc:
        raise MalformedResponseError(f"the REST answer's output does not fit its signature: {exc}") from None
