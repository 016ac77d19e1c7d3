"""Ready-to-send example requests for a signature: TF Serving REST JSON, a gRPC request, or a
warmup file (TFRecord of ``PredictionLog``).

Values come from the signature: for a parsing signature, one ``tf.train.Example`` per row built
from the recovered feature spec (defaults where known, zeros and empty strings otherwise); for
raw inputs, zeros of the right dtype and shape (unknown dims become the batch size for the
first dim and 1 for the others).
"""

from __future__ import annotations

import base64
import json
import math
import os
import pprint
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfship._wire import (
    CLASSIFY_METHOD,
    DATATYPES,
    METHOD_KINDS,
    ClassificationRequest,
    Example,
    PredictRequest,
    RegressionRequest,
    TensorProto,
    dtype_enum_name,
    is_message,
    protos,
    read_tfrecord_file,
    write_tfrecord_file,
)
from tfship.errors import InputError, ModelError, ModelInputError
from tfship.inspect._reader import SavedModelInfo, SignatureInfo
from tfship.inspect._tensorinfo import MAX_RANK, MAX_VALUES, FeatureSpecEntry, TensorInfo, element_count
from tfship.records import ByFields, to_example

_ZERO: dict[str, Any] = {"string": "", "bool": False}


@dataclass(frozen=True)
class ExampleRequest:
    """An example request for one signature.

    Attributes:
        verb: ``predict``, ``classify`` or ``regress`` (the TF Serving API to call).
        url_path: the REST path, e.g. ``/v1/models/penguins:predict``.
        rest: the REST JSON body.
        grpc: the gRPC request proto (``PredictRequest``, ``ClassificationRequest`` or
            ``RegressionRequest``).

    Example:
        >>> req = example_request(read_saved_model("m/1"), model_name="m")  # doctest: +SKIP
        >>> req.url_path  # doctest: +SKIP
        '/v1/models/m:classify'
    """

    verb: str
    url_path: str
    rest: dict[str, Any]
    grpc: PredictRequest | ClassificationRequest | RegressionRequest

    @property
    def model_name(self) -> str:
        """The served model name the request addresses."""
        return str(self.grpc.model_spec.name)

    def curl(self, url: str = "http://localhost:8501") -> str:
        """A ``curl`` command line that sends this request to TF Serving's REST API at ``url``.

        Example:
            >>> print(req.curl("http://localhost:8501"))  # doctest: +SKIP
            curl -sS -X POST http://localhost:8501/v1/models/m:classify -H 'Content-Type: ...' -d '{...}'
        """
        base = url if "://" in url else f"http://{url}"
        body = json.dumps(self.rest, separators=(",", ":"))
        return " ".join(
            [
                "curl -sS -X POST",
                shlex.quote(base.rstrip("/") + self.url_path),
                "-H 'Content-Type: application/json'",
                "-d",
                shlex.quote(body),
            ]
        )

    def python(self, target: str = "localhost:8500") -> str:
        """A Python snippet sending this request with ``tfship.serve_client.ServingClient``.

        ``target`` is a gRPC ``host:port`` or a REST ``http://`` URL, as the client takes.

        Example:
            >>> exec(req.python("127.0.0.1:8500"))  # doctest: +SKIP
        """
        signature = self.rest["signature_name"]
        if self.verb == "predict":
            data, argument = _predict_inputs(self.rest["instances"]), "inputs"
        else:
            data, argument = self.rest["examples"], "examples"
        uses_b64 = "base64.b64decode(" in (text := _python_literal(data))
        lines = ["import base64", ""] if uses_b64 else []
        lines += [
            "from tfship.serve_client import ServingClient",
            "",
            f"{argument} = {text}",
            f"with ServingClient({target!r}) as client:",
            f"    result = client.{self.verb}({self.model_name!r}, {argument}, signature={signature!r})",
            "print(result)",
        ]
        return "\n".join(lines) + "\n"

    def warmup_record(self) -> bytes:
        """This request as one serialized ``PredictionLog`` (a warmup record)."""
        record = protos().prediction_log_pb2.PredictionLog()
        getattr(record, f"{self.verb}_log").request.CopyFrom(self.grpc)
        # map entries (the inputs) sorted: the same bytes on every protobuf, whose map order differs
        return bytes(record.SerializeToString(deterministic=True))


class _B64:
    """A ``{"b64": ...}`` REST value, written in Python as the bytes it stands for."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"base64.b64decode({self.text!r})"


def _from_rest(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"b64"}:
        return _B64(value["b64"])
    if isinstance(value, list):
        return [_from_rest(v) for v in value]
    return value


def _predict_inputs(instances: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Row-format ``instances`` as the column-per-input dict ``ServingClient.predict`` takes."""
    keys = list(instances[0]) if instances else []
    return {k: [_from_rest(row[k]) for row in instances] for k in keys}


def _python_literal(data: object) -> str:
    return pprint.pformat(data, width=96, sort_dicts=False)


def _zero(dtype: str) -> Any:
    if dtype in _ZERO:
        return _ZERO[dtype]
    return 0.0 if dtype.startswith(("float", "bfloat", "complex")) else 0


def _filled(shape: tuple[int | None, ...], value: Any) -> Any:
    if not shape:
        return value
    return [_filled(shape[1:], value) for _ in range(shape[0] or 1)]


def _record(spec: dict[str, FeatureSpecEntry], values: Mapping[str, Any]) -> dict[str, Any]:
    """The given values, and for each feature not given its default, else zeros of its shape."""
    record: dict[str, Any] = {}
    for name, entry in spec.items():
        if name in values:
            record[name] = values[name]
            continue
        if entry.default is not None:
            filler = list(entry.default)
        else:
            filler = [_zero(entry.dtype)] * math.prod(d or 1 for d in entry.shape)
        record[name] = filler[0] if entry.shape == () else filler  # a scalar feature takes one value
    return record


def _typing(spec: dict[str, FeatureSpecEntry]) -> ByFields:
    """The features a parsing signature reads, as the fields that type its Examples."""
    return ByFields(entry.field for entry in spec.values())


def _example(spec: dict[str, FeatureSpecEntry], values: Mapping[str, Any]) -> Example:
    return to_example(_record(spec, values), _typing(spec))


def _example_json(spec: dict[str, FeatureSpecEntry], values: Mapping[str, Any]) -> dict[str, Any]:
    # TF Serving's REST API infers a feature's list from the JSON numbers: 33 would be an
    # int64_list for a float feature, so values take the feature's own type (33.0).
    typed = _typing(spec).values(_record(spec, values))
    row: dict[str, Any] = {}
    for name, entry in spec.items():
        scalar = entry.kind == "fixed" and entry.shape in ((), (1,))
        row[name] = typed[name][0] if scalar else typed[name]
    return row


def _row_value(tensor: TensorInfo, values: Mapping[str, Any]) -> Any:
    if tensor.key in values:
        return values[tensor.key]
    shape = tensor.shape[1:] if tensor.shape else ()
    return _filled(shape, _zero(tensor.dtype))


def _tensor_proto(tensor: TensorInfo, rows: list[Any]) -> TensorProto:
    proto = protos().tensor_pb2.TensorProto(dtype=tensor.proto.dtype)
    shape = [len(rows), *_dims(rows[0])]
    for d in shape:
        proto.tensor_shape.dim.add(size=d)
    flat = _flatten(rows)
    entry = DATATYPES.get(tensor.proto.dtype)
    if entry is None:  # float8, int4 and the like: no value field tfship writes them in
        raise ModelInputError(
            f"input {tensor.key!r} has dtype {dtype_enum_name(tensor.proto.dtype)}, which tfship "
            "cannot write an example request for"
        )
    values = getattr(proto, entry.field)
    values.extend(v if not isinstance(v, str) else v.encode() for v in flat)
    return proto


def _dims(value: object) -> list[int]:
    return [len(value), *_dims(value[0])] if isinstance(value, list) and value else []


def _flatten(value: object) -> list[Any]:
    if isinstance(value, list):
        return [x for item in value for x in _flatten(item)]
    return [value]


def _check_dense(sig: SignatureInfo) -> None:
    for key, tensor in sig.inputs.items():
        if tensor.encoding != "dense":
            raise ModelInputError(
                f"signature {sig.key!r} input {key!r} is a {tensor.encoding} tensor; TF Serving's "
                "Predict API (REST and gRPC) only sends dense tensors. Export a raw receiver with "
                "dense placeholders or a parsing receiver (tf.Example input) instead"
            )


def _predict(
    sig: SignatureInfo, model: str, batch: int, values: Mapping[str, Any]
) -> tuple[dict[str, Any], Any]:
    _check_dense(sig)
    request = protos().predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = sig.key
    spec = sig.feature_spec
    instances: list[dict[str, Any]] = [{} for _ in range(batch)]
    for key, tensor in sig.inputs.items():
        if spec is not None:
            serialized = _example(spec, values).SerializeToString()
            rows: list[Any] = [serialized] * batch
            for row in instances:
                row[key] = {"b64": base64.b64encode(serialized).decode()}
        else:
            rows = [_row_value(tensor, values) for _ in range(batch)]
            for row, value in zip(instances, rows):
                row[key] = value
        request.inputs[key].CopyFrom(_tensor_proto(tensor, rows))
    return {"signature_name": sig.key, "instances": instances}, request


def _classify_or_regress(
    sig: SignatureInfo, model: str, batch: int, values: Mapping[str, Any]
) -> tuple[dict[str, Any], Any]:
    spec = sig.feature_spec
    if spec is None:
        raise ModelInputError(
            f"signature {sig.key!r} ({sig.method_name}) takes serialized tf.Examples but its "
            "feature spec could not be recovered from the graph; no example request can be built",
        )
    pb = protos()
    request = (
        pb.classification_pb2.ClassificationRequest()
        if sig.method_name == CLASSIFY_METHOD
        else pb.regression_pb2.RegressionRequest()
    )
    request.model_spec.name = model
    request.model_spec.signature_name = sig.key
    for _ in range(batch):
        request.input.example_list.examples.add().CopyFrom(_example(spec, values))
    body = {"signature_name": sig.key, "examples": [_example_json(spec, values) for _ in range(batch)]}
    return body, request


def _row_shapes(sig: SignatureInfo) -> dict[str, tuple[int | None, ...]]:
    """What one row of a request fills, per feature (parsing) or input (raw, without the batch)."""
    if sig.feature_spec is not None:
        return {name: entry.shape for name, entry in sig.feature_spec.items() if entry.kind == "fixed"}
    return {key: t.shape[1:] if t.shape else () for key, t in sig.inputs.items() if t.encoding == "dense"}


def _check_size(info: SavedModelInfo, sig: SignatureInfo, batch: int, given: Mapping[str, Any]) -> None:
    """Refuse, before building anything, a request the signature's declared shapes make huge
    (the values given are the caller's, not built here)."""
    total = 0
    for name, shape in _row_shapes(sig).items():
        if name in given:
            continue
        what = "feature" if sig.feature_spec is not None else "input"
        if len(shape) > MAX_RANK:
            raise ModelError(
                f"{info.file}: signature {sig.key!r} {what} {name!r} has {len(shape)} dimensions; "
                f"TensorFlow allows {MAX_RANK}",
                path=str(info.path),
            )
        total += element_count(d or 1 for d in shape) * batch
        if total > MAX_VALUES:
            raise ModelError(
                f"{info.file}: signature {sig.key!r} {what} {name!r} of shape "
                f"{[-1 if d is None else d for d in shape]} makes a request of {batch} row(s) hold "
                f"more than {MAX_VALUES} values, the most an example request holds",
                path=str(info.path),
            )


def model_name_of(info: SavedModelInfo) -> str:
    """The model name TF Serving would use: the base directory of a numeric version dir."""
    path = info.path.resolve()
    return path.parent.name if path.name.isdigit() else path.name


def example_request(
    info: SavedModelInfo,
    *,
    signature: str | None = None,
    tags: str = "serve",
    batch: int = 1,
    model_name: str | None = None,
    values: Mapping[str, Any] | None = None,
) -> ExampleRequest:
    """Build an example request for one signature of a SavedModel.

    Args:
        info: the SavedModel (``read_saved_model``).
        signature: the signature key; ``None`` means ``serving_default``.
        tags: the tag-set of the MetaGraph to serve.
        batch: how many rows (examples) the request carries.
        model_name: the served model name; defaults to the export's base directory name.
        values: feature (parsing signatures) or input (raw signatures) name -> value to use
            instead of the defaults and zeros.

    Raises:
        SignatureNotFoundError: the tag-set or signature does not exist.
        ModelInputError: the signature cannot be called through TF Serving's APIs (sparse input).
        ModelError: the shapes the signature declares would make the request hold more than
            ``MAX_VALUES`` values (or a shape has more dimensions than TensorFlow allows).

    Example:
        >>> req = example_request(read_saved_model("export/best/1"))  # doctest: +SKIP
        >>> sorted(req.rest)  # doctest: +SKIP
        ['examples', 'signature_name']
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if model_name is not None and not model_name.strip():
        raise ValueError("model_name is empty: give the name the server serves the model under")
    sig = info.meta_graph(tags).signature(signature)
    model = model_name or model_name_of(info)
    values = dict(values or {})
    names = sorted(sig.feature_spec) if sig.feature_spec is not None else list(sig.inputs)
    unknown = sorted(set(values) - set(names))
    if unknown:
        kind = "features" if sig.feature_spec is not None else "inputs"
        raise InputError(
            f"signature {sig.key!r} has no {kind} named {', '.join(map(repr, unknown))}; "
            f"valid {kind}: {', '.join(names)}"
        )
    _check_size(info, sig, batch, values)
    verb = METHOD_KINDS.get(sig.method_name, "predict")
    if verb == "predict":
        rest, grpc = _predict(sig, model, batch, values)
    else:
        rest, grpc = _classify_or_regress(sig, model, batch, values)
    return ExampleRequest(verb, f"/v1/models/{model}:{verb}", rest, grpc)


def write_warmup(path: str | os.PathLike[str], requests: Iterable[ExampleRequest | Any]) -> int:
    """Write a TF Serving warmup file (a TFRecord of ``PredictionLog``), atomically.

    Args:
        path: the file, usually ``<version>/assets.extra/tf_serving_warmup_requests``.
        requests: ``ExampleRequest``s, or ``PredictionLog`` messages as they are.

    Returns:
        How many records were written.

    Raises:
        InputError: a request is neither (a bare ``PredictRequest`` would be written as a record
            TF Serving cannot read); nothing is written then.

    Example:
        >>> req = example_request(read_saved_model("m/1"))  # doctest: +SKIP
        >>> write_warmup("m/1/assets.extra/tf_serving_warmup_requests", [req])  # doctest: +SKIP
        1
    """
    records: list[bytes] = []
    for index, r in enumerate(requests):
        if isinstance(r, ExampleRequest):
            records.append(r.warmup_record())
        elif is_message(r, "tensorflow.serving.PredictionLog"):  # tfship's class or TF Serving's
            records.append(bytes(r.SerializeToString(deterministic=True)))
        else:
            kind = getattr(getattr(r, "DESCRIPTOR", None), "full_name", type(r).__name__)
            raise InputError(f"warmup request {index} is a {kind}, not a PredictionLog or ExampleRequest")
    return write_tfrecord_file(path, records)


def read_warmup(path: str | os.PathLike[str]) -> list[Any]:
    """Read a warmup file back into ``PredictionLog`` messages.

    Raises:
        InputError: the file is not a TFRecord file, or a record is not a ``PredictionLog``.

    Example:
        >>> [log.WhichOneof("log_type") for log in read_warmup(path)]  # doctest: +SKIP
        ['predict_log']
    """
    log_cls = protos().prediction_log_pb2.PredictionLog
    logs = []
    for index, record in enumerate(read_tfrecord_file(path)):
        log = log_cls()
        try:
            log.ParseFromString(record)
        except Exception:  # protobuf's DecodeError
            raise InputError(f"{os.fspath(path)}: record {index} is not a PredictionLog") from None
        logs.append(log)
    return logs
