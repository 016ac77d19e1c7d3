"""Warmup requests: write ``assets.extra/tf_serving_warmup_requests`` and replay it.

TF Serving replays this TFRecord of ``PredictionLog`` protos when it loads a version, before it
serves traffic, and reads at most 1000 records. Each record here is one request of one example,
aimed at ``serving_default`` with its exact input keys: a Classify/Regress request of
``tf.Example``s for a Classify/Regress signature, a Predict request of tensors otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tfship._tf import tf, tf_error_cause, tf_message
from tfship._wire import (
    MAX_WARMUP_RECORDS,
    ClassificationRequest,
    Example,
    MetaGraphDef,
    PredictionLog,
    PredictRequest,
    RegressionRequest,
    SignatureDef,
    TensorInfoProto,
    is_message,
    ours,
    protos,
)
from tfship.errors import DataError, ExportError, ModelInputError
from tfship.exporters._receivers import DEFAULT_RECEIVER_KEY, Receiver
from tfship.records import ByFields, BySchema, Typing, to_example
from tfship.records._shared import parse_spec_fields

logger = logging.getLogger("tfship.exporters")

#: One warmup request's example: a ``tf.train.Example``, its serialized bytes, or a dict of values.
WarmupRecord = Example | bytes | Mapping[str, Any]


def build_warmup_logs(
    records: Iterable[WarmupRecord],
    signature: SignatureDef,
    receiver: Callable[[], Any] | None,
    *,
    signature_key: str,
) -> list[PredictionLog]:
    """Turn records (``tf.train.Example``, serialized bytes or dicts) into ``PredictionLog``s.

    Args:
        records: the requests' contents, one example each; at most 1000 are kept.
        signature: the ``SignatureDef`` the requests target.
        receiver: the receiver the export was built with: a ``Receiver`` types dict records
            by its schema or parse spec; any other receiver function (or None) by value.
        signature_key: the key of ``signature`` in the SavedModel.

    Returns:
        The ``PredictionLog`` protos, in record order.
    """
    items = list(records)
    if len(items) > MAX_WARMUP_RECORDS:
        logger.info(
            "warmup: kept %d of %d records (TF Serving reads at most %d)",
            MAX_WARMUP_RECORDS,
            len(items),
            MAX_WARMUP_RECORDS,
        )
        items = items[:MAX_WARMUP_RECORDS]
    known = receiver if isinstance(receiver, Receiver) else None
    method = signature.method_name.rsplit("/", 1)[-1]
    if method in ("classify", "regress"):
        return [_example_log(method, signature_key, _to_example(r, known)) for r in items]
    return [_predict_log(signature_key, signature, r, known) for r in items]


def replay(session: Any, meta_graph: MetaGraphDef, logs: Sequence[PredictionLog]) -> int:
    """Run every warmup request against its signature in a loaded session.

    Raises:
        ExportError: if a request names a missing signature or input, or fails to run.
    """
    for i, log in enumerate(logs):
        kind = log.WhichOneof("log_type")
        request = getattr(log, kind).request
        key = request.model_spec.signature_name or "serving_default"
        if key not in meta_graph.signature_def:
            raise ExportError(
                f"warmup record {i}: signature {key!r} not in the export; "
                f"signatures: {', '.join(sorted(meta_graph.signature_def))}"
            )
        sig = meta_graph.signature_def[key]
        feeds = _feeds(i, kind, request, sig)
        fetches = {k: v.name for k, v in sig.outputs.items() if v.name}
        try:
            session.run(fetches, feed_dict=feeds)
        except Exception as exc:  # TF raises many error types; each becomes one message
            raise ExportError(
                f"warmup record {i} failed on signature {key!r}: {tf_error_cause(exc)}"
            ) from exc
    return len(logs)


def example_logs(path: Path, tags: str = "serve") -> dict[str, Any]:
    """One request per signature TF Serving can call, as ``PredictionLog``s keyed by signature.

    Each is built from the export's own signatures the way ``tfship inspect request`` builds
    them: parsed features take the defaults the graph holds (zeros and empty strings where a
    feature has none), raw inputs take zeros of their dtype and shape. Signatures TF Serving's
    APIs cannot call (sparse inputs) are left out.
    """
    from tfship.inspect import ExampleRequest, example_request, read_saved_model

    info = read_saved_model(path)
    logs: dict[str, Any] = {}
    for key in sorted(info.meta_graph(tags).signatures):
        if key.startswith("__"):
            continue
        try:
            request: ExampleRequest = example_request(info, signature=key, tags=tags)
        except ModelInputError:
            continue
        log = protos().prediction_log_pb2.PredictionLog()
        log.ParseFromString(request.warmup_record())
        logs[key] = log
    return logs


def _feeds(
    i: int, kind: str, request: PredictRequest | ClassificationRequest | RegressionRequest, sig: SignatureDef
) -> dict[str, Any]:
    if kind in ("classify_log", "regress_log"):
        (info,) = sig.inputs.values()
        examples = [e.SerializeToString() for e in request.input.example_list.examples]
        return {info.name: np.array(examples, dtype=object)}
    missing = sorted(set(sig.inputs) - set(request.inputs))
    extra = sorted(set(request.inputs) - set(sig.inputs))
    if missing or extra:
        raise ExportError(
            f"warmup record {i}: inputs {sorted(request.inputs)} do not match the signature's "
            f"{sorted(sig.inputs)} (missing {missing}, unknown {extra})"
        )
    make = tf().make_ndarray  # TensorFlow's function takes TensorFlow's class: crossed by bytes
    return {sig.inputs[k].name: make(tf_message(v)) for k, v in request.inputs.items()}


def _example_log(method: str, key: str, example: Example) -> PredictionLog:
    pb = protos()
    spec = pb.model_pb2.ModelSpec(signature_name=key)
    # a tf.train.Example of TensorFlow's class, taken by its bytes
    inp = pb.input_pb2.Input(example_list=pb.input_pb2.ExampleList(examples=[ours(example)]))
    log_pb2 = pb.prediction_log_pb2
    if method == "classify":
        req = pb.classification_pb2.ClassificationRequest(model_spec=spec, input=inp)
        return log_pb2.PredictionLog(classify_log=log_pb2.ClassifyLog(request=req))
    rreq = pb.regression_pb2.RegressionRequest(model_spec=spec, input=inp)
    return log_pb2.PredictionLog(regress_log=log_pb2.RegressLog(request=rreq))


def _predict_log(
    key: str, sig: SignatureDef, record: WarmupRecord, receiver: Receiver | None
) -> PredictionLog:
    pb = protos()
    t = tf()
    req = pb.predict_pb2.PredictRequest(model_spec=pb.model_pb2.ModelSpec(signature_name=key))
    string_inputs = [k for k, v in sig.inputs.items() if v.dtype == t.string.as_datatype_enum]
    if len(sig.inputs) == 1 and string_inputs and _is_example_input(sig, receiver):
        example = _to_example(record, receiver).SerializeToString()
        req.inputs[string_inputs[0]].CopyFrom(ours(t.make_tensor_proto([example], dtype=t.string)))
    else:
        values = _to_dict(record, receiver)
        for name, info in sig.inputs.items():
            if info.WhichOneof("encoding") != "name":
                raise ExportError(
                    f"warmup requests carry dense tensors only, but input {name!r} of "
                    f"signature {key!r} is sparse or ragged; export with receiver 'parsing' "
                    "or 'both' to warm up with tf.Examples"
                )
            array = _dense_value(name, info, values, receiver)
            req.inputs[name].CopyFrom(ours(t.make_tensor_proto(array)))
    return pb.prediction_log_pb2.PredictionLog(predict_log=pb.prediction_log_pb2.PredictLog(request=req))


def _is_example_input(sig: SignatureDef, receiver: Receiver | None) -> bool:
    key = DEFAULT_RECEIVER_KEY if receiver is None else receiver.receiver_key
    return key in sig.inputs or "inputs" in sig.inputs


def _dense_value(
    name: str, info: TensorInfoProto, values: Mapping[str, Any], receiver: Receiver | None
) -> np.ndarray[Any, Any]:
    t = tf()
    dtype = t.dtypes.as_dtype(info.dtype)
    if name in values:
        value = values[name]
    else:
        default = _default_of(name, receiver)
        if default is None:
            raise DataError(
                f"warmup record: input {name!r} missing and has no default; "
                f"record fields: {', '.join(sorted(values)) or '(none)'}"
            )
        value = default
    dims = [d.size for d in info.tensor_shape.dim][1:]
    if dtype == t.string:
        flat = [v.encode() if isinstance(v, str) else v for v in np.ravel(np.asarray(value, object))]
        array = np.array(flat, dtype=object)
    else:
        array = np.asarray(value, dtype=dtype.as_numpy_dtype)
    target = [1, *[d if d >= 0 else -1 for d in dims]] if info.tensor_shape.dim else []
    try:
        return array.reshape(target) if target else array
    except ValueError as exc:
        raise DataError(
            f"warmup record: input {name!r} expects shape {target[1:]} per example, got {np.shape(value)}"
        ) from exc


def _default_of(name: str, receiver: Receiver | None) -> Any:
    feat = _parse_spec(receiver).get(name)
    # a tf.io.FixedLenFeature has a default; the other parsing features have none
    return getattr(feat, "default_value", None)


def _parse_spec(receiver: Receiver | None) -> Mapping[str, Any]:
    return {} if receiver is None or receiver.parse_spec is None else receiver.parse_spec


def _to_example(record: WarmupRecord, receiver: Receiver | None) -> Example:
    if not isinstance(record, (Mapping, bytes)) and not is_message(record, "tensorflow.Example"):
        raise TypeError(
            f"a warmup record must be a tf.train.Example, bytes or dict, not {type(record).__name__}"
        )
    # A receiver built from a schema types by it (defaults and all); one from a bare parse spec,
    # by the spec's fields.
    schema = None if receiver is None else receiver.schema
    typing: Typing = (
        BySchema(schema) if schema is not None else ByFields(parse_spec_fields(_parse_spec(receiver)))
    )
    return to_example(record, typing, where="warmup record")


def _to_dict(record: WarmupRecord, receiver: Receiver | None) -> dict[str, Any]:
    t = tf()
    if isinstance(record, bytes):
        record = t.train.Example.FromString(record)
    if is_message(record, "tensorflow.Example"):
        return example_to_dict(record)
    if not isinstance(record, Mapping):
        raise TypeError(
            f"a warmup record must be a tf.train.Example, bytes or dict, not {type(record).__name__}"
        )
    if receiver is not None and receiver.schema is not None:
        return dict(receiver.schema.convert_record(record, where="warmup"))
    return dict(record)


def example_to_dict(example: Example) -> dict[str, list[Any]]:
    """The values of a ``tf.train.Example`` as a dict of lists."""
    out: dict[str, list[Any]] = {}
    for name, feat in example.features.feature.items():
        kind = feat.WhichOneof("kind")
        out[name] = list(getattr(feat, kind).value) if kind else []
    return out
