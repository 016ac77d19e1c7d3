"""Requests from arguments: TF Serving's request messages, inputs checked against the served
signature, and the bookkeeping of waiting for a model. (Answers become results in
``_results.py``; the flows of ``_base.py`` put the two together.)

Pure functions, no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union

import numpy as np

from tfship._wire import (
    CLASSIFY_METHOD,
    DEFAULT_SIGNATURE,
    REGRESS_METHOD,
    ClassificationRequest,
    Example,
    GetModelMetadataRequest,
    GetModelStatusRequest,
    Input,
    InputCheckError,
    ModelConfigList,
    ModelServerConfig,
    ModelSpecProto,
    MultiInferenceRequest,
    PredictRequest,
    RegressionRequest,
    ReloadConfigRequest,
    TensorProto,
    check_inputs,
    encode_tensor,
    is_message,
    ours,
    protos,
    shape_text,
)
from tfship.errors import InputError
from tfship.records import BySchema, ByValue
from tfship.records import to_example as build_example
from tfship.serve_client._errors import (
    DeadlineExceededError,
    InvalidInputError,
    ModelNotFoundError,
    ServingCallError,
    ServingSignatureNotFoundError,
    UnavailableError,
)
from tfship.serve_client._options import CHECK_EVERY, DeadlineCheck
from tfship.serve_client._results import VersionStatus, _public_keys, check_ready

if TYPE_CHECKING:
    from tfship.inspect import SignatureInfo, TensorInfo
    from tfship.schema import Schema


class ExamplesArgs(Protocol):
    """What a ``ClassificationRequest`` or ``RegressionRequest`` is built from (the flows'
    ``ExamplesCall`` is one): the model named, and the records with their shared context."""

    @property
    def model(self) -> str: ...
    @property
    def version(self) -> int | None: ...
    @property
    def label(self) -> str | None: ...
    @property
    def signature(self) -> str | None: ...
    @property
    def examples(self) -> Iterable[Any]: ...
    @property
    def context(self) -> Any: ...
    @property
    def schema(self) -> Schema | None: ...


#: A config reload's ``config``: a ``ModelServerConfig``, a ``ModelConfigList`` or its entries as dicts.
ReloadConfig = Union[ModelServerConfig, ModelConfigList, Iterable[Mapping[str, Any]]]

# Method -> the request message it sends, under ``protos()``.
_EXAMPLES_REQUESTS = {
    "Classify": ("classification_pb2", "ClassificationRequest"),
    "Regress": ("regression_pb2", "RegressionRequest"),
}


# ---------------------------------------------------------- requests from arguments


def model_spec_proto(
    model: str,
    *,
    version: int | None = None,
    label: str | None = None,
    signature: str | None = None,
) -> ModelSpecProto:
    """Build a ``ModelSpec``; ``version=None`` leaves the version unset (never sends 0).

    Raises:
        ValueError: both version and label, an empty model name or a negative version.
    """
    if not model:
        raise ValueError("model name must be a non-empty string")
    if version is not None and label is not None:
        raise ValueError("give version or label, not both")
    spec = protos().model_pb2.ModelSpec(name=model)
    if version is not None:
        spec.version.value = checked_version(version)
    elif label is not None:
        spec.version_label = label
    if signature:
        spec.signature_name = signature
    return spec


def checked_version(version: int) -> int:
    """``version`` as an int; a bool or a negative number raises ValueError."""
    if isinstance(version, bool) or int(version) < 0:
        raise ValueError(f"version must be a non-negative int, got {version!r}")
    return int(version)


def predict_inputs(
    inputs: Any,
    sig: SignatureInfo | None,
    model: str,
    signature: str | None,
    *,
    cast: bool,
    output_filter: Sequence[str] | None,
    validate: bool = True,
    as_arrays: bool = False,
    schema: Schema | None = None,
    check: DeadlineCheck | None = None,
) -> dict[str, Any]:
    """Encoded inputs, checked against ``sig`` (when known and ``validate``), and a checked
    ``output_filter``: everything that can be wrong is found before sending. ``as_arrays``:
    checked inputs stay numpy arrays (for a transport that writes its own format). Records
    become serialized Examples (:func:`records_as_examples`, typed by ``schema``; ``check``
    bounds the building by the call's deadline)."""
    key = signature or DEFAULT_SIGNATURE
    if is_records(inputs):
        inputs = records_as_examples(inputs, sig, model, schema, check)
    encoded = encode_inputs(inputs, sig if validate else None, model, cast=cast, as_arrays=as_arrays)
    check_output_filter(output_filter, sig, model, key)
    return encoded


def encode_inputs(
    inputs: Any,
    signature: SignatureInfo | None,
    model: str,
    *,
    cast: bool = False,
    as_arrays: bool = False,
) -> dict[str, Any]:
    """Encode predict inputs to TensorProtos, checked against the signature when known (with
    ``as_arrays``, checked inputs are returned as the numpy arrays of the check).

    The check is ``tfship._wire``'s ``check_inputs`` (names, dtypes, shapes, and its one cast
    rule): Python values take the signature's dtype, numpy arrays must already have it unless
    ``cast``; nothing is cast silently and everything is checked before anything is sent.
    """
    if _is_dataframe(inputs):
        # One input per column; lists (not float64 arrays) so each takes the signature's dtype.
        inputs = {str(column): inputs[column].tolist() for column in inputs.columns}
    if not isinstance(inputs, Mapping):
        if signature is None or len(signature.inputs) != 1:
            expected = "" if signature is None else f" (inputs: {_describe(signature.inputs)})"
            raise InvalidInputError(
                f"model {model!r}: inputs must be a dict of input name -> values{expected}; a "
                "bare array is accepted only for a signature with exactly one input",
                model=model,
            )
        inputs = {next(iter(signature.inputs)): inputs}
    if signature is None:
        if as_arrays and all(_passes_as_is(v) for v in inputs.values()):
            # nothing to check them against and a transport that writes arrays itself: a
            # TensorProto would only be decoded again
            return {str(k): v for k, v in inputs.items()}
        return {str(k): _encoded(model, str(k), v) for k, v in inputs.items()}
    try:
        arrays = check_inputs(signature, inputs, cast=cast)
    except InputCheckError as exc:
        raise InvalidInputError(f"model {model!r} {exc}", model=model) from None
    if as_arrays and all(isinstance(a, np.ndarray) for a in arrays.values()):
        return arrays
    return {key: encode_tensor(array) for key, array in arrays.items()}


def _passes_as_is(value: object) -> bool:
    """A numeric numpy array (native byte order) that a TensorProto would carry unchanged."""
    return (
        isinstance(value, np.ndarray)
        and value.dtype.kind in "biuf"
        and value.dtype.isnative
        and (value.dtype.kind != "f" or value.dtype.itemsize in (4, 8))
    )


def _encoded(model: str, key: str, value: Any) -> TensorProto:
    """One input encoded as it is (no signature to check it against); values that form no
    tensor are the caller's bad input."""
    try:
        return encode_tensor(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(f"model {model!r} input {key!r}: {exc}", model=model) from None


def _is_dataframe(value: object) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


def check_output_filter(
    output_filter: Sequence[str] | None, signature: SignatureInfo | None, model: str, key: str
) -> None:
    """Unknown output names fail before sending, listing the signature's outputs."""
    if output_filter is None or signature is None:
        return
    if isinstance(output_filter, str):
        raise TypeError("output_filter must be a list of output names, not a str")
    unknown = sorted(set(output_filter) - set(signature.outputs))
    if unknown:
        raise InvalidInputError(
            f"model {model!r} signature {key!r}: no outputs {unknown}; "
            f"outputs are: {', '.join(signature.outputs)}",
            model=model,
        )


def _describe(table: Mapping[str, TensorInfo]) -> str:
    return ", ".join(f"{key}: {info.dtype} {shape_text(info.shape)}" for key, info in table.items())


def predict_request(
    model: str,
    encoded: Mapping[str, Any],
    *,
    signature: str | None,
    version: int | None,
    label: str | None,
    output_filter: Sequence[str] | None,
) -> PredictRequest:
    request = protos().predict_pb2.PredictRequest()
    request.model_spec.CopyFrom(model_spec_proto(model, version=version, label=label, signature=signature))
    for key, tensor in encoded.items():
        if not isinstance(tensor, np.ndarray):  # arrays travel beside the request (Call.inputs)
            request.inputs[key].CopyFrom(tensor)
    if output_filter is not None:
        if isinstance(output_filter, str):
            raise TypeError("output_filter must be a list of output names, not a str")
        request.output_filter.extend(output_filter)
    return request


def request_example(record: Any, schema: Schema | None = None, where: str = "") -> Example:
    """A ``tf.train.Example`` from a record dict (str/bytes -> bytes, int/bool -> int64,
    float -> float, or typed by ``schema``), an Example (returned as is) or its serialized bytes.

    ``tfship.records.to_example`` for a call's records: a bad one is the call's
    ``InvalidInputError``, named by ``where``.

    Example:
        >>> ex = request_example({"age": 3, "name": "x", "w": [0.5, 1.5]})
        >>> ex.features.feature["w"].float_list.value[:]
        [0.5, 1.5]
    """
    where = where or "record"
    typing = ByValue() if schema is None else BySchema(schema)
    try:
        return build_example(record, typing, where=where)
    except (TypeError, ValueError, OverflowError, InputError) as exc:
        # A bad record is bad input to the call, whatever found it (protobuf, the schema).
        text = str(exc)
        message = text if text.startswith(where) else f"{where}: {text}"
        raise InvalidInputError(message) from exc


def examples_input(
    examples: Iterable[Any],
    context: Any = None,
    schema: Schema | None = None,
    check: DeadlineCheck | None = None,
) -> Input:
    """The ``tensorflow.serving.Input`` for classify/regress/multi_inference; ``check`` (the
    call's deadline) is called every ``CHECK_EVERY`` records."""
    pb = protos()
    if isinstance(examples, (Mapping, str, bytes)) or not isinstance(examples, Iterable):
        raise TypeError(f"examples must be a list of records, not a {type(examples).__name__}")
    built = _built_examples(examples, schema, check, "example")
    if not built:
        raise InvalidInputError("no examples: give at least one record")
    message = pb.input_pb2.Input()
    if context is None:
        message.example_list.examples.extend(built)
    else:
        target = message.example_list_with_context
        target.examples.extend(built)
        target.context.CopyFrom(request_example(context, schema, "context"))
    return message


def _built_examples(
    records: Iterable[Any], schema: Schema | None, check: DeadlineCheck | None, noun: str
) -> list[Any]:
    """Each record as a ``tf.train.Example``, named ``{noun} N`` in errors; ``check`` every
    ``CHECK_EVERY`` records."""
    if check is None:
        return [request_example(record, schema, f"{noun} {i}") for i, record in enumerate(records)]
    built = []
    for number, record in enumerate(records):
        if number % CHECK_EVERY == 0:
            check("while the request was built")
        built.append(request_example(record, schema, f"{noun} {number}"))
    return built


# The note a server's refusal of records built without a schema gets: the likely cause and fix.
TYPED_BY_VALUE = (
    "the records were typed by their Python values (int -> int64, float -> float, str -> bytes); "
    "give schema= to type them as the model's features"
)


def is_records(inputs: object) -> bool:
    """Whether predict inputs are records: a non-empty list or tuple of dicts (or
    ``tf.train.Example`` s), which a parsing signature takes as serialized Examples."""
    return (
        isinstance(inputs, (list, tuple))
        and bool(inputs)
        and all(isinstance(r, Mapping) or is_message(r, "tensorflow.Example") for r in inputs)
    )


def examples_input_key(sig: SignatureInfo | None, names: Iterable[str] = ()) -> str | None:
    """The input of ``sig`` known to take serialized ``tf.train.Example`` s, or None.

    That is its only input, of dtype string, not named by the records (``names``), and known as
    Examples by what the signature says: a classify or regress signature, an input keyed
    ``examples`` (a parsing receiver's), or fed by a tensor named for examples (an Estimator's
    ``input_example_tensor``). A string input known by nothing else may take text: records are
    not sent to it as Examples silently.

    Example:
        >>> from types import SimpleNamespace as S
        >>> sig = S(method_name="tensorflow/serving/predict",
        ...         inputs={"examples": S(dtype="string", name="input_example_tensor:0")})
        >>> examples_input_key(sig, ["age"]), examples_input_key(sig, ["examples"])
        ('examples', None)
    """
    key = _one_string_input(sig, names)
    if key is None or sig is None:
        return None
    named = key == "examples" or "example" in sig.inputs[key].name.lower()
    return key if named or sig.method_name in (CLASSIFY_METHOD, REGRESS_METHOD) else None


def _one_string_input(sig: SignatureInfo | None, names: Iterable[str]) -> str | None:
    """The key of the only input of ``sig`` when it is a string the records do not name."""
    if sig is None or len(sig.inputs) != 1:
        return None
    key, info = next(iter(sig.inputs.items()))
    return key if info.dtype == "string" and key not in set(names) else None


def records_as_examples(
    records: Sequence[Any],
    sig: SignatureInfo | None,
    model: str,
    schema: Schema | None = None,
    check: DeadlineCheck | None = None,
) -> dict[str, Any]:
    """Predict inputs for records: ``{input: serialized Examples}``, for a signature that parses
    them (see :func:`examples_input_key`); values typed by ``schema``, or by their Python type.

    Raises:
        InvalidInputError: the signature is unknown, or does not take serialized Examples; the
            message says what to give instead.
    """
    names = {str(k) for record in records if isinstance(record, Mapping) for k in record}
    key = examples_input_key(sig, names)
    if key is None:
        raise InvalidInputError(_records_refused(sig, model, names), model=model)
    built = _built_examples(records, schema, check, "record")
    return {key: np.array([example.SerializeToString() for example in built], dtype=object)}


def _records_refused(sig: SignatureInfo | None, model: str, names: Iterable[str]) -> str:
    """Why records cannot go to ``sig``, and what to give instead, in one line."""
    build = "[tfship.records.to_example(record).SerializeToString(), ...]"
    if sig is None:
        return (
            f"model {model!r}: records (dicts) go to a signature that parses serialized tf.train.Example s, "
            f"and the server told no signature; give {{input name: {build}}}"
        )
    key = _one_string_input(sig, names)
    if key is not None:
        return (
            f"model {model!r} signature {sig.key!r} takes one string input, {key!r}, which nothing "
            f"says parses tf.train.Example s (it may take text); if it does, give {{{key!r}: {build}}}"
        )
    return (
        f"model {model!r} signature {sig.key!r} takes {_describe(sig.inputs)}, not records: records "
        "(dicts) are sent as serialized tf.train.Example s only to a signature whose one input "
        "parses them; give a dict of input name -> values"
    )


def examples_request(
    method: str, call: ExamplesArgs, check: DeadlineCheck | None = None
) -> ClassificationRequest | RegressionRequest:
    """The ``ClassificationRequest`` (``method="Classify"``) or ``RegressionRequest``
    (``"Regress"``) for a call's records with its optional shared context; ``check`` bounds the
    building by the call's deadline."""
    module, name = _EXAMPLES_REQUESTS[method]
    request = getattr(getattr(protos(), module), name)()
    spec = model_spec_proto(call.model, version=call.version, label=call.label, signature=call.signature)
    request.model_spec.CopyFrom(spec)
    request.input.CopyFrom(examples_input(call.examples, call.context, call.schema, check))
    return request


def metadata_request(model: str, *, version: int | None, label: str | None) -> GetModelMetadataRequest:
    """A ``GetModelMetadataRequest`` asking for the signatures."""
    request = protos().get_model_metadata_pb2.GetModelMetadataRequest()
    request.model_spec.CopyFrom(model_spec_proto(model, version=version, label=label))
    request.metadata_field.append("signature_def")
    return request


def status_request(model: str, *, version: int | None) -> GetModelStatusRequest:
    """A ``GetModelStatusRequest``."""
    request = protos().get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.CopyFrom(model_spec_proto(model, version=version))
    return request


def reload_request(config: ReloadConfig) -> ReloadConfigRequest:
    """A ``ReloadConfigRequest`` from a ``ModelServerConfig``/``ModelConfigList`` or dicts."""
    pb = protos()
    request = pb.model_management_pb2.ReloadConfigRequest()
    # tfship's classes, or TF Serving's own (taken by their bytes)
    if is_message(config, "tensorflow.serving.ModelServerConfig"):
        request.config.CopyFrom(ours(config))
    elif is_message(config, "tensorflow.serving.ModelConfigList"):
        request.config.model_config_list.CopyFrom(ours(config))
    else:
        from google.protobuf import json_format

        for entry in config:
            model_config = request.config.model_config_list.config.add()
            json_format.ParseDict(dict(entry), model_config)
    return request


def multi_inference_request(
    model: str,
    examples_message: Input,
    tasks: Sequence[tuple[str, str]],
    *,
    version: int | None,
    label: str | None,
) -> MultiInferenceRequest:
    pb = protos()
    request = pb.inference_pb2.MultiInferenceRequest()
    request.input.CopyFrom(examples_message)
    if not tasks:
        raise ValueError("give at least one (signature, method) task")
    for signature, method in tasks:
        if method not in ("classify", "regress"):
            raise ValueError(f"task method must be 'classify' or 'regress', got {method!r}")
        task = request.tasks.add()
        task.model_spec.CopyFrom(model_spec_proto(model, version=version, label=label, signature=signature))
        task.method_name = f"tensorflow/serving/{method}"
    return request


# ------------------------------------------------------- validation against metadata


def pick_signature(
    signatures: Mapping[str, SignatureInfo] | None, key: str | None, model: str
) -> SignatureInfo | None:
    """The signature to validate against, or None when metadata is unknown."""
    if signatures is None:
        return None
    key = key or DEFAULT_SIGNATURE
    if key not in signatures:
        raise ServingSignatureNotFoundError(
            f"model {model!r} has no signature {key!r}; signatures are: "
            f"{', '.join(_public_keys(signatures)) or '(none)'}",
            model=model,
        )
    return signatures[key]


# ------------------------------------------------------------------ waiting for a model

# Answers that mean "not yet": keep polling until the deadline.
WAIT_ERRORS = (UnavailableError, ModelNotFoundError, DeadlineExceededError)


class Waiter:
    """The bookkeeping of ``wait_until_available``: poll budget, last state seen, the deadline.

    The clients only send ``status`` and sleep; ``step`` decides (ready, keep polling, give up).
    """

    def __init__(self, model: str, version: int | None, timeout: float, poll: float) -> None:
        self.model = model
        self.version = version
        self.timeout = timeout
        self.poll = poll
        self.deadline = time.monotonic() + timeout
        self.last = "no answer yet"

    def budget(self) -> float:
        """The timeout of the next ``status`` call."""
        return max(0.05, min(5.0, self.deadline - time.monotonic()))

    def step(self, answer: list[VersionStatus] | ServingCallError) -> VersionStatus | None:
        """The ready version, or None to poll again; raises when the deadline would pass."""
        if isinstance(answer, ServingCallError):
            self.last = answer.details or str(answer)
        else:
            ready = check_ready(answer, self.model, self.version)
            if ready is not None:
                return ready
            self.last = ", ".join(f"{s.version}: {s.state}" for s in answer)
        if time.monotonic() + self.poll >= self.deadline:
            raise self._not_available()
        return None

    def _not_available(self) -> DeadlineExceededError:
        where = "" if self.version is None else f" version {self.version}"
        return DeadlineExceededError(
            f"model {self.model!r}{where} not available after {self.timeout:g} s; last seen: {self.last}",
            code="DEADLINE_EXCEEDED",
            model=self.model,
            version=self.version,
        )
