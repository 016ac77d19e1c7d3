"""The requests a promotion replays: from records, from a TFRecord of ``PredictionLog``, or defaults.

Every request becomes a Predict call on its signature with dense inputs: a Classify or
Regress log's examples are sent serialized to the signature's one input, which is what TF
Serving runs for those APIs too. So baseline and candidate get byte-identical calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire import ClassificationRequest, PredictRequest, RegressionRequest, TensorProto
from tfship.errors import InputError
from tfship.inspect import SavedModelInfo, example_request, read_warmup
from tfship.records import Field, read_records

_TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords", ".log")
_RECORD_SUFFIXES = (".jsonl", ".json", ".csv")


@dataclass(frozen=True)
class Request:
    """One Predict call: a signature and its dense inputs (batch first)."""

    signature: str
    inputs: dict[str, Any]

    @property
    def rows(self) -> int:
        """The batch size of the call."""
        return int(next(iter(self.inputs.values())).shape[0]) if self.inputs else 0


@dataclass
class RequestSet:
    """The replayed requests, where they came from, and notes on what was skipped or filled.

    ``repeated`` is true when every request is the same one (the defaults' request): a
    comparison over them measures one row, however many times it was sent.
    """

    requests: list[Request]
    source: str
    notes: list[str] = field(default_factory=list)
    labels: list[Any] | None = None
    repeated: bool = False


def _dense(value: TensorProto) -> NDArray[Any]:
    from tfship.serve_client import decode_tensor

    return decode_tensor(value)


def request_of(
    kind: str, proto: PredictRequest | ClassificationRequest | RegressionRequest, info: SavedModelInfo
) -> Request:
    """The Predict form of a Predict, Classify or Regress request proto."""
    signature = proto.model_spec.signature_name or "serving_default"
    if kind == "predict":
        return Request(signature, {key: _dense(t) for key, t in proto.inputs.items()})
    sig = info.meta_graph("serve").signature(signature)
    (key,) = list(sig.inputs)  # Classify/Regress signatures have exactly one input
    examples = proto.input.example_list.examples
    serialized = np.array([e.SerializeToString() for e in examples], dtype=object)
    return Request(signature, {key: serialized})


def from_logs(path: Path, info: SavedModelInfo) -> RequestSet:
    """Requests from a TFRecord of ``PredictionLog`` (a warmup file, a TF Serving request log)."""
    requests: list[Request] = []
    skipped: dict[str, int] = {}
    for log in read_warmup(path):
        kind = log.WhichOneof("log_type") or "empty"
        name = kind[: -len("_log")] if kind.endswith("_log") else kind
        if name not in ("predict", "classify", "regress"):
            skipped[kind] = skipped.get(kind, 0) + 1
            continue
        request = getattr(log, kind).request
        if name != "predict" and request.input.WhichOneof("kind") != "example_list":
            key = f"{kind} (examples with a context)"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        requests.append(request_of(name, request, info))
    notes = [
        f"{count} {kind} record(s) skipped: only Predict, Classify and Regress are replayed"
        for kind, count in sorted(skipped.items())
    ]
    if not requests:
        raise InputError(f"{path}: no Predict, Classify or Regress request in it")
    return RequestSet(requests, str(path), notes)


def signature_fields(info: SavedModelInfo, signature: str | None) -> dict[str, Field]:
    """The fields a signature takes, by name: a parsing signature's ``tf.Example`` features, or
    a raw one's inputs (one value per row for an input of shape ``[batch]``)."""
    sig = info.meta_graph("serve").signature(signature)
    if sig.feature_spec is not None:
        return {
            name: Field(
                name,
                entry.dtype,
                tuple(entry.shape) if entry.kind == "fixed" else None,
                sparse=entry.kind != "fixed",
            )
            for name, entry in sig.feature_spec.items()
        }
    return {
        name: Field(name, tensor.dtype, None if tensor.shape is None else tuple(tensor.shape[1:]))
        for name, tensor in sig.inputs.items()
    }


def from_records(
    records: Sequence[tuple[str, Mapping[str, Any]]],
    info: SavedModelInfo,
    *,
    signature: str | None,
    source: str,
    label: str | None = None,
) -> RequestSet:
    """One request of one row per record; a field the signature does not take is left out
    with a note, a missing value takes the signature's default. ``records`` are
    ``(place, record)``, as ``read_records(..., places=True)`` gives them: a bad record is
    named by its place (``file:line``)."""
    if not records:
        raise InputError(f"{source}: no records in it")
    sig = info.meta_graph("serve").signature(signature)
    names = set(sig.feature_spec) if sig.feature_spec is not None else set(sig.inputs)
    ignored: set[str] = set()
    filled = 0
    requests: list[Request] = []
    labels: list[Any] = []
    for place, record in records:
        if label is not None:
            if record.get(label) is None:
                raise InputError(f"{place}: no label {label!r}")
            labels.append(record[label])
        values = {k: v for k, v in record.items() if k in names and v is not None}
        ignored.update(k for k in record if k not in names and k != label)
        filled += sum(1 for k in names if k not in values)
        try:
            built = example_request(info, signature=sig.key, values=values)
        except (InputError, ValueError, TypeError) as exc:
            raise InputError(f"{place}: {exc}") from None
        requests.append(request_of(built.verb, built.grpc, info))
    notes = []
    if ignored:
        notes.append(f"fields the signature does not take were ignored: {', '.join(sorted(ignored))}")
    if filled:
        notes.append(f"{filled} missing value(s) took the signature's defaults")
    return RequestSet(requests, source, notes, labels if label is not None else None)


def from_defaults(info: SavedModelInfo, count: int) -> RequestSet:
    """``count`` requests built from ``serving_default``'s defaults."""
    built = example_request(info)
    request = request_of(built.verb, built.grpc, info)
    return RequestSet([request] * count, "the signature's defaults", [], repeated=True)


def from_eval(
    path: Path, info: SavedModelInfo, *, count: int, signature: str | None = None, label: str | None = None
) -> RequestSet:
    """The rows of a labelled eval file as requests, their ``label`` left out: real rows to
    compare and time when no requests are given. The first ``count`` are kept.

    Raises:
        InputError: the file is empty or a record does not fit the signature.
    """
    records = read_records(path, fields=signature_fields(info, signature), places=True)
    without = f", without their label {label!r}" if label is not None else ""
    # with the label named, a row without it is refused here, before any model is loaded
    chosen = from_records(
        records, info, signature=signature, label=label, source=f"the eval records of {path}{without}"
    )
    return _first(chosen, count)


def _first(chosen: RequestSet, count: int) -> RequestSet:
    if len(chosen.requests) > count:
        chosen.notes.append(f"the first {count} of {len(chosen.requests)} requests were replayed")
        chosen.requests = chosen.requests[:count]
    return chosen


def load_requests(
    path: Path | None,
    info: SavedModelInfo,
    *,
    count: int,
    signature: str | None = None,
    eval_path: Path | None = None,
    label: str | None = None,
) -> RequestSet:
    """The requests to replay: from ``path`` (records or a TFRecord of logs), else the rows of
    ``eval_path`` without their ``label``, else one request of the defaults, repeated.

    Raises:
        InputError: the file is missing, of an unknown kind, empty, or holds nothing to replay.
    """
    if path is None and eval_path is not None:
        return from_eval(eval_path, info, count=count, signature=signature, label=label)
    if path is None:
        return from_defaults(info, count)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in _RECORD_SUFFIXES:
        # the signature's types decide what a CSV cell is; other columns (a label) are inferred
        records = read_records(path, fields=signature_fields(info, signature), places=True)
        chosen = from_records(records, info, signature=signature, source=str(path))
    elif suffix in _TFRECORD_SUFFIXES or path.name.endswith("warmup_requests"):
        chosen = from_logs(path, info)
    else:
        raise InputError(
            f"{path}: unknown kind of request file {suffix!r}; expected records "
            "(.jsonl, .json, .csv) or a TFRecord of PredictionLog (.tfrecord, a warmup file)"
        )
    return _first(chosen, count)


def batched(requests: Sequence[Request], size: int) -> Request:
    """A call of ``size`` rows made of the rows of ``requests`` with the first one's signature."""
    first = requests[0]
    same = [
        r
        for r in requests
        if r.signature == first.signature and set(r.inputs) == set(first.inputs) and r.rows
    ]
    if not same:
        raise InputError("the requests carry no rows to time")
    chosen: list[Request] = []
    rows = 0
    while rows < size:
        for request in same:
            chosen.append(request)
            rows += request.rows
            if rows >= size:
                break
    inputs = {k: np.concatenate([r.inputs[k] for r in chosen])[:size] for k in first.inputs}
    return Request(first.signature, inputs)
