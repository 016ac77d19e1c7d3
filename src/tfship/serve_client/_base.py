"""The one implementation of every client call, whatever the transport, sync or async.

Each RPC is written once as a *flow*: a generator that builds the request, yields a ``Send``
(the ``Call`` and the call's deadline) or a ``Sleep``, receives the answer (or has the failure thrown
in) and returns the typed result. Validation against the served signature, the signatures cache and
its refetch after a rejected call, and waiting for a model all live in these flows.
``ServingClient`` runs them with blocking sends and ``time.sleep``; ``AsyncServingClient``
with ``await``: the only code the two clients do not share is how they wait. Both hand a flow
the user's arguments as one frozen call object (``PredictCall``, ``ExamplesCall``,
``MultiInferenceCall``), so a new option is one field, not a new position in two call sites.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, Union

import numpy as np

from tfship.serve_client._calls import (
    TYPED_BY_VALUE,
    WAIT_ERRORS,
    ReloadConfig,
    Waiter,
    examples_input,
    examples_request,
    is_records,
    metadata_request,
    multi_inference_request,
    pick_signature,
    predict_inputs,
    predict_request,
    reload_request,
    status_request,
)
from tfship.serve_client._errors import (
    CallCancelledError,
    InvalidInputError,
    MalformedResponseError,
    ModelNotFoundError,
    ServingCallError,
    ServingSignatureNotFoundError,
    UnimplementedError,
    renamed_for_call,
)
from tfship.serve_client._options import (
    DEFAULT,
    DeadlineCheck,
    RetryPolicy,
    RetryState,
    Timeout,
    deadline_check,
    deadline_for,
    time_left,
)
from tfship.serve_client._results import (
    ClassifyResult,
    ModelMetadata,
    MultiInferenceResult,
    PredictResult,
    RegressResult,
    VersionStatus,
    check_reload,
    classify_result,
    metadata_result,
    multi_inference_result,
    predict_result,
    regress_result,
    status_list,
    wrong_kind_of_signature,
)
from tfship.serve_client._transports import AsyncTransport, Call, Transport

if TYPE_CHECKING:
    from tfship.inspect import SignatureInfo
    from tfship.schema import Schema

__all__ = [
    "BaseClient",
    "ExamplesCall",
    "Flow",
    "KnownSignatures",
    "MetadataCache",
    "ModelRef",
    "MultiInferenceCall",
    "PredictCall",
    "Send",
    "Sleep",
    "run_flow",
]

T = TypeVar("T")
_METADATA_TTL = 60.0
# Rejections after which the served signature may have changed (a new version): refetch it.
# An answer that does not fit the cached signature (REST decodes outputs with its dtypes) too.
_REFETCH_AFTER = (
    InvalidInputError,
    ModelNotFoundError,
    ServingSignatureNotFoundError,
    MalformedResponseError,
)
# Client-side rejections that a newer signature may accept: checked again after one refetch.
_STALE_SIGNATURE = (InvalidInputError, ServingSignatureNotFoundError)


@dataclass(frozen=True)
class Sleep:
    """A flow's request to wait ``seconds`` before it goes on."""

    seconds: float


@dataclass(frozen=True)
class Send:
    """A flow's request to send ``call`` before ``deadline`` (``time.monotonic()``; None: never).

    The deadline is the whole call's, set when the flow starts: fetching the signature, every
    attempt and every backoff of a call share it.
    """

    call: Call
    deadline: float | None


class ModelRef(NamedTuple):
    """The model a call names, and which of its versions: a number, a label, or neither (the
    latest). The key of the signatures cache."""

    model: str
    version: int | None = None
    label: str | None = None

    @property
    def asked(self) -> int | str | None:
        """The version or label the call names, for error messages."""
        return self.version if self.version is not None else self.label


# The call objects: one method call's arguments as the user gave them, built by the sync and
# the async client alike and taken whole by a flow (no order of positional arguments to keep).


@dataclass(frozen=True, slots=True)
class PredictCall:
    """The arguments of one ``predict``. ``inputs`` is what the user gave (a mapping of names
    to arrays, lists or scalars, one bare array, a DataFrame, or records for a signature that
    parses ``tf.train.Example`` s, typed by ``schema``)."""

    model: str
    inputs: Any
    signature: str | None = None
    version: int | None = None
    label: str | None = None
    output_filter: Sequence[str] | None = None
    timeout: Timeout = DEFAULT
    schema: Schema | None = None

    @property
    def ref(self) -> ModelRef:
        return ModelRef(self.model, self.version, self.label)


@dataclass(frozen=True, slots=True)
class ExamplesCall:
    """The arguments of one ``classify`` or ``regress``: records (dicts or ``tf.train.Example``),
    an optional ``context`` record merged into each, and a ``schema`` to convert dicts with."""

    model: str
    examples: Iterable[Any]
    context: Any = None
    signature: str | None = None
    version: int | None = None
    label: str | None = None
    schema: Schema | None = None
    timeout: Timeout = DEFAULT

    @property
    def ref(self) -> ModelRef:
        return ModelRef(self.model, self.version, self.label)


@dataclass(frozen=True, slots=True)
class MultiInferenceCall:
    """The arguments of one ``multi_inference``: the records of :class:`ExamplesCall` and the
    ``(signature, "classify" | "regress")`` tasks to answer on them, in order."""

    model: str
    examples: Iterable[Any]
    tasks: Sequence[tuple[str, str]]
    context: Any = None
    version: int | None = None
    label: str | None = None
    schema: Schema | None = None
    timeout: Timeout = DEFAULT

    @property
    def ref(self) -> ModelRef:
        return ModelRef(self.model, self.version, self.label)


class KnownSignatures(NamedTuple):
    """The signatures a call validates against: the version they came from (None: not
    reported) and whether this call fetched them (``fresh``) or found them cached."""

    signatures: dict[str, SignatureInfo]
    version: int | None
    fresh: bool


Flow = Generator[Union[Send, Sleep], Any, T]


class MetadataCache:
    """Signatures per (model, version, label) with the version they came from, fetched once and
    kept ``_METADATA_TTL`` seconds, or until an answer names another version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (when fetched, the signatures as a later call sees them: not fresh)
        self._items: dict[ModelRef, tuple[float, KnownSignatures]] = {}

    def get(self, key: ModelRef) -> KnownSignatures | None:
        with self._lock:
            item = self._items.get(key)
        if item is None or time.monotonic() - item[0] > _METADATA_TTL:
            return None
        return item[1]

    def put(self, key: ModelRef, value: KnownSignatures) -> None:
        with self._lock:
            self._items[key] = (time.monotonic(), value._replace(fresh=False))

    def drop(self, model: str | None = None) -> None:
        """Forget the signatures of ``model`` (None: of every model)."""
        with self._lock:
            for key in [k for k in self._items if model is None or k[0] == model]:
                del self._items[key]


class BaseClient:
    """Options, the signatures cache and the flow of every RPC; a client adds a transport and
    the way it runs flows (``_run``)."""

    transport: Transport | AsyncTransport

    def __init__(
        self,
        transport: Transport | AsyncTransport,
        *,
        timeout: float | None,
        retries: int | RetryPolicy | None,
        validate: bool,
        cast: bool,
    ) -> None:
        self.transport = transport
        self.timeout = timeout
        self.retry_policy = RetryPolicy.of(retries)
        self.validate = validate
        self.cast = cast
        self._metadata = MetadataCache()
        self._rng = random.Random()
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.transport!r}, timeout={self.timeout})"

    def _check_open(self) -> None:
        """A call on a closed client fails as a cancelled call, before anything is sent."""
        if self._closed:
            raise CallCancelledError(
                f"this {type(self).__name__} is closed; create a new one", code="CANCELLED"
            )

    def _retry_state(self, step: Send) -> RetryState:
        """The attempts of one send, within the call's deadline; refuses a closed client."""
        self._check_open()
        return RetryState(self.retry_policy, step.deadline, self._rng, step.call.context)

    def _deadline(self, timeout: Timeout) -> float | None:
        """The deadline of a call that starts now (``timeout=DEFAULT``: the client's)."""
        return deadline_for(timeout, self.timeout)

    # -- signatures, for validation (and for REST's output dtypes)
    def _signatures_flow(
        self,
        ref: ModelRef,
        deadline: float | None,
        method: str,
        *,
        refresh: bool = False,
        needed: bool = False,
    ) -> Flow[KnownSignatures | None]:
        """The signatures ``method`` validates against: cached, or fetched (``refresh``: always;
        ``needed``: even without validation, as records need them to be sent at all).

        A failed fetch is reported as a failure of ``method``, the call the user made.
        """
        if not (self.validate or self.transport.needs_signature or needed):
            return None
        cached = None if refresh else self._metadata.get(ref)
        if cached is not None:
            return cached
        try:
            meta = yield from self._metadata_flow(ref, deadline)
        except UnimplementedError:
            return None  # a server without metadata: validation is best effort
        except ServingCallError as exc:
            raise renamed_for_call(exc, method, "its signature could not be fetched") from exc
        known = KnownSignatures(meta.signatures, meta.model_spec.version, fresh=True)
        self._metadata.put(ref, known)
        return known

    def _forget_if_outlived(self, model: str, known: KnownSignatures | None, answered: int | None) -> None:
        """Drop cached signatures once an answer names another version than theirs (a label or
        "latest" that now means another version)."""
        if known is not None and None not in (known.version, answered) and known.version != answered:
            self._metadata.drop(model)

    # -- the RPCs
    def _predict_flow(self, call: PredictCall) -> Flow[PredictResult]:
        deadline = self._deadline(call.timeout)
        records = is_records(call.inputs)
        check = deadline_check(deadline, _context("Predict", call.ref))
        known = yield from self._signatures_flow(call.ref, deadline, "Predict", needed=records)
        try:
            sent = self._predict_call(call, known, check)
        except _STALE_SIGNATURE:
            if known is None or known.fresh:
                raise
            # Refused by a cached signature: a newer version may take these inputs. Ask once.
            known = yield from self._signatures_flow(
                call.ref, deadline, "Predict", refresh=True, needed=records
            )
            sent = self._predict_call(call, known, check)
        try:
            answer = yield Send(sent, deadline)
        except _REFETCH_AFTER as exc:
            self._metadata.drop(call.model)
            if records and call.schema is None and _refused_types(exc):
                raise _noted(exc, TYPED_BY_VALUE) from exc
            raise
        result = predict_result(answer)
        self._forget_if_outlived(call.model, known, result.model_spec.version)
        time_left(deadline, "while the answer was decoded", sent.context)
        return result

    def _predict_call(
        self, call: PredictCall, known: KnownSignatures | None, check: DeadlineCheck | None
    ) -> Call:
        """The Predict to send: its request, the signature checked against and the inputs as
        arrays when the transport takes them (the request then holds none); raises what the
        check refuses."""
        sig = pick_signature(None if known is None else known.signatures, call.signature, call.model)
        encoded = predict_inputs(
            call.inputs,
            sig,
            call.model,
            call.signature,
            cast=self.cast,
            output_filter=call.output_filter,
            validate=self.validate,
            as_arrays=self.transport.takes_arrays,
            schema=call.schema,
            check=check,
        )
        request = predict_request(
            call.model,
            encoded,
            signature=call.signature,
            version=call.version,
            label=call.label,
            output_filter=call.output_filter,
        )
        arrays = encoded if any(isinstance(a, np.ndarray) for a in encoded.values()) else None
        return Call("Predict", request, call.model, call.ref.asked, sig, arrays)

    def _examples_flow(self, method: str, call: ExamplesCall) -> Flow[tuple[Any, float | None]]:
        """Classify or Regress (``method``): the response message, and the call's deadline
        (set before the request is built: building many records counts).

        A refusal by a signature of another kind (Classify on a regression signature) is told
        in one line naming the signatures that can answer, instead of the server's text (which
        may carry the whole SignatureDef).
        """
        model = call.model
        deadline = self._deadline(call.timeout)  # the call's own building of the request counts
        try:
            request = examples_request(method, call, deadline_check(deadline, _context(method, call.ref)))
        except InvalidInputError as exc:  # a bad record: say which call and model it was for
            raise InvalidInputError(f"{method} model {model!r}: {exc}", model=model) from exc.__cause__
        try:
            response = yield Send(Call(method, request, model, call.ref.asked), deadline)
        except InvalidInputError as exc:
            try:
                meta = yield from self._metadata_flow(call.ref, deadline)
            except ServingCallError:
                raise exc from None  # the metadata is a courtesy here: keep the server's error
            better = wrong_kind_of_signature(exc, method, model, call.signature, meta.signatures)
            if better is None:
                raise
            raise better from exc
        return response, deadline

    def _classify_flow(self, call: ExamplesCall) -> Flow[ClassifyResult]:
        response, deadline = yield from self._examples_flow("Classify", call)
        result = classify_result(response.result, response.model_spec, response)
        time_left(deadline, "while the answer was decoded", _context("Classify", call.ref))
        return result

    def _regress_flow(self, call: ExamplesCall) -> Flow[RegressResult]:
        response, deadline = yield from self._examples_flow("Regress", call)
        result = regress_result(response.result, response.model_spec, response)
        time_left(deadline, "while the answer was decoded", _context("Regress", call.ref))
        return result

    def _multi_inference_flow(self, call: MultiInferenceCall) -> Flow[MultiInferenceResult]:
        deadline = self._deadline(call.timeout)
        context = _context("MultiInference", call.ref)
        request = multi_inference_request(
            call.model,
            examples_input(call.examples, call.context, call.schema, deadline_check(deadline, context)),
            call.tasks,
            version=call.version,
            label=call.label,
        )
        response = yield Send(Call("MultiInference", request, call.model, call.ref.asked), deadline)
        result = multi_inference_result(response)
        time_left(deadline, "while the answer was decoded", context)
        return result

    def _metadata_flow(self, ref: ModelRef, deadline: float | None) -> Flow[ModelMetadata]:
        request = metadata_request(ref.model, version=ref.version, label=ref.label)
        response = yield Send(Call("GetModelMetadata", request, ref.model, ref.asked), deadline)
        return metadata_result(response)

    def _status_flow(
        self, model: str, version: int | None, deadline: float | None, labels: Sequence[str] = ()
    ) -> Flow[list[VersionStatus]]:
        """GetModelStatus; each of ``labels`` is resolved (GetModelMetadata names the version a
        label points at, which GetModelStatus never reports) and shown on its version."""
        if isinstance(labels, str):
            raise TypeError("labels must be a list of label names, not a str")
        request = status_request(model, version=version)
        response = yield Send(Call("GetModelStatus", request, model, version), deadline)
        found = status_list(response)
        named: dict[int, list[str]] = {}
        for label in labels:
            meta = yield from self._metadata_flow(ModelRef(model, None, label), deadline)
            if meta.model_spec.version is not None:
                named.setdefault(meta.model_spec.version, []).append(label)
        return [replace(s, labels=tuple(named.get(s.version, ()))) for s in found]

    def _wait_flow(self, model: str, version: int | None, timeout: float, poll: float) -> Flow[VersionStatus]:
        waiter = Waiter(model, version, timeout, poll)
        while True:
            try:
                answer: list[VersionStatus] | ServingCallError = yield from self._status_flow(
                    model, version, time.monotonic() + waiter.budget()
                )
            except WAIT_ERRORS as exc:
                answer = exc
            ready = waiter.step(answer)
            if ready is not None:
                return ready
            yield Sleep(poll)

    def _reload_flow(self, config: ReloadConfig, timeout: Timeout) -> Flow[None]:
        deadline = self._deadline(timeout)
        response = yield Send(Call("HandleReloadConfigRequest", reload_request(config)), deadline)
        check_reload(response)
        self._metadata.drop()


def _context(method: str, ref: ModelRef) -> dict[str, Any]:
    """The keywords of ``error_from_status`` for a failure of ``method`` on ``ref`` (as
    ``Call.context``), for the errors a flow raises itself."""
    return {"model": ref.model, "version": ref.asked, "method": method}


def _refused_types(exc: ServingCallError) -> bool:
    """Whether the server refused the features of Examples the client typed by value (a dtype
    that does not match, or a feature without a default left out)."""
    return isinstance(exc, InvalidInputError) and exc.code is not None and "type" in (exc.details or "")


def _noted(exc: ServingCallError, note: str) -> ServingCallError:
    """``exc`` with ``note`` (the likely cause and its fix) added to its message."""
    return type(exc)(
        f"{exc}; {note}", code=exc.code, details=exc.details, model=exc.model, version=exc.version
    )


def run_flow(flow: Flow[T], send: Callable[[Send], Any], sleep: Callable[[float], None]) -> T:
    """Run ``flow`` to its result with blocking ``send`` and ``sleep``."""
    try:
        step = next(flow)
        while True:
            if isinstance(step, Sleep):
                sleep(step.seconds)
                step = flow.send(None)
                continue
            try:
                answer = send(step)
            except ServingCallError as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(answer)
    except StopIteration as stop:
        result: T = stop.value
        return result
