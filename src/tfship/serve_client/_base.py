"""The one implementation of every client call, whatever the transport, sync or async.

Each RPC is written once as a *flow*: a generator that builds the request, yields a ``Send``
(the ``Call`` and the call's deadline) or a ``Sleep``, receives the answer (or has the failure thrown
in) and returns the typed result. Validation against the served signature, the signatures cache and
its refetch after a rejected call, and waiting for a model all live in these flows.
``ServingClient`` runs them with blocking sends and ``time.sleep``; ``AsyncServingClient``
with ``await``: the only code the two clients do not share is how they wait.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, TypeVar, Union

import numpy as np

from tfship.serve_client._calls import (
    WAIT_ERRORS,
    Waiter,
    examples_input,
    examples_request,
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
from tfship.serve_client._options import RetryPolicy, RetryState, deadline_for
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
from tfship.serve_client._transports import Call

__all__ = ["BaseClient", "Flow", "KnownSignatures", "MetadataCache", "Send", "Sleep", "run_flow"]

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
_CacheKey = tuple[str, Union[int, None], Union[str, None]]


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


class KnownSignatures(NamedTuple):
    """The signatures a call validates against: the version they came from (None: not
    reported) and whether this call fetched them (``fresh``) or found them cached."""

    signatures: dict[str, Any]
    version: int | None
    fresh: bool


Flow = Generator[Union[Send, Sleep], Any, T]


class MetadataCache:
    """Signatures per (model, version, label) with the version they came from, fetched once and
    kept ``_METADATA_TTL`` seconds, or until an answer names another version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[_CacheKey, tuple[float, KnownSignatures]] = {}

    def get(self, key: _CacheKey) -> KnownSignatures | None:
        with self._lock:
            item = self._items.get(key)
        if item is None or time.monotonic() - item[0] > _METADATA_TTL:
            return None
        return item[1]._replace(fresh=False)

    def put(self, key: _CacheKey, value: KnownSignatures) -> None:
        with self._lock:
            self._items[key] = (time.monotonic(), value)

    def drop(self, model: str | None = None) -> None:
        """Forget the signatures of ``model`` (None: of every model)."""
        with self._lock:
            for key in [k for k in self._items if model is None or k[0] == model]:
                del self._items[key]


class BaseClient:
    """Options, the signatures cache and the flow of every RPC; a client adds a transport and
    the way it runs flows (``_run``)."""

    def __init__(
        self,
        transport: Any,
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

    def _deadline(self, timeout: Any) -> float | None:
        """The deadline of a call that starts now (``timeout=DEFAULT``: the client's)."""
        return deadline_for(timeout, self.timeout)

    # -- signatures, for validation (and for REST's output dtypes)
    def _signatures_flow(
        self,
        model: str,
        version: int | None,
        label: str | None,
        deadline: float | None,
        method: str,
        *,
        refresh: bool = False,
    ) -> Flow[KnownSignatures | None]:
        """The signatures ``method`` validates against: cached, or fetched (``refresh``: always).

        A failed fetch is reported as a failure of ``method``, the call the user made.
        """
        if not (self.validate or self.transport.needs_signature):
            return None
        key = (model, version, label)
        cached = None if refresh else self._metadata.get(key)
        if cached is not None:
            return cached
        try:
            meta = yield from self._metadata_flow(model, version, label, deadline)
        except UnimplementedError:
            return None  # a server without metadata: validation is best effort
        except ServingCallError as exc:
            raise renamed_for_call(exc, method, "its signature could not be fetched") from exc
        known = KnownSignatures(meta.signatures, meta.model_spec.version, fresh=True)
        self._metadata.put(key, known)
        return known

    def _forget_if_outlived(self, model: str, known: KnownSignatures | None, answered: int | None) -> None:
        """Drop cached signatures once an answer names another version than theirs (a label or
        "latest" that now means another version)."""
        if known is not None and None not in (known.version, answered) and known.version != answered:
            self._metadata.drop(model)

    # -- the RPCs
    def _predict_flow(
        self,
        model: str,
        inputs: Any,
        *,
        signature: str | None,
        version: int | None,
        label: str | None,
        output_filter: Sequence[str] | None,
        timeout: Any,
    ) -> Flow[PredictResult]:
        deadline = self._deadline(timeout)
        known = yield from self._signatures_flow(model, version, label, deadline, "Predict")
        call: dict[str, Any] = {
            "signature": signature, "version": version, "label": label, "output_filter": output_filter
        }
        try:
            sig, request, arrays = self._predict_call(model, inputs, known, **call)
        except _STALE_SIGNATURE:
            if known is None or known.fresh:
                raise
            # Refused by a cached signature: a newer version may take these inputs. Ask once.
            known = yield from self._signatures_flow(model, version, label, deadline, "Predict", refresh=True)
            sig, request, arrays = self._predict_call(model, inputs, known, **call)
        sent = Call("Predict", request, model, _asked(version, label), sig, arrays)
        try:
            answer = yield Send(sent, deadline)
        except _REFETCH_AFTER:
            self._metadata.drop(model)
            raise
        result = predict_result(answer)
        self._forget_if_outlived(model, known, result.model_spec.version)
        return result

    def _predict_call(
        self,
        model: str,
        inputs: Any,
        known: KnownSignatures | None,
        *,
        signature: str | None,
        version: int | None,
        label: str | None,
        output_filter: Sequence[str] | None,
    ) -> tuple[Any, Any, Any]:
        """(the signature checked against, the PredictRequest, the inputs as arrays when the
        transport takes them and the request does not hold them); raises what the check refuses."""
        sig = pick_signature(None if known is None else known.signatures, signature, model)
        encoded = predict_inputs(
            inputs,
            sig,
            model,
            signature,
            cast=self.cast,
            output_filter=output_filter,
            validate=self.validate,
            as_arrays=getattr(self.transport, "takes_arrays", False),
        )
        request = predict_request(
            model, encoded, signature=signature, version=version, label=label, output_filter=output_filter
        )
        arrays = encoded if any(isinstance(a, np.ndarray) for a in encoded.values()) else None
        return sig, request, arrays

    def _examples_flow(
        self,
        method: str,
        model: str,
        examples: Iterable[Any],
        context: Any,
        signature: str | None,
        version: int | None,
        label: str | None,
        schema: Any,
        timeout: Any,
    ) -> Flow[Any]:
        """Classify or Regress (``method``): the response message.

        A refusal by a signature of another kind (Classify on a regression signature) is told
        in one line naming the signatures that can answer, instead of the server's text (which
        may carry the whole SignatureDef).
        """
        try:
            request = examples_request(method, model, examples, context, signature, version, label, schema)
        except InvalidInputError as exc:  # a bad record: say which call and model it was for
            raise InvalidInputError(f"{method} model {model!r}: {exc}", model=model) from exc.__cause__
        deadline = self._deadline(timeout)
        try:
            response = yield Send(Call(method, request, model, _asked(version, label)), deadline)
        except InvalidInputError as exc:
            try:
                meta = yield from self._metadata_flow(model, version, label, deadline)
            except ServingCallError:
                raise exc from None  # the metadata is a courtesy here: keep the server's error
            better = wrong_kind_of_signature(exc, method, model, signature, meta.signatures)
            if better is None:
                raise
            raise better from exc
        return response

    def _classify_flow(self, *args: Any) -> Flow[ClassifyResult]:
        """Classify; arguments as ``_examples_flow`` after the method."""
        response = yield from self._examples_flow("Classify", *args)
        return classify_result(response.result, response.model_spec, response)

    def _regress_flow(self, *args: Any) -> Flow[RegressResult]:
        """Regress; arguments as ``_examples_flow`` after the method."""
        response = yield from self._examples_flow("Regress", *args)
        return regress_result(response.result, response.model_spec, response)

    def _multi_inference_flow(
        self,
        model: str,
        examples: Iterable[Any],
        tasks: Sequence[tuple[str, str]],
        context: Any,
        version: int | None,
        label: str | None,
        schema: Any,
        timeout: Any,
    ) -> Flow[MultiInferenceResult]:
        request = multi_inference_request(
            model, examples_input(examples, context, schema), tasks, version=version, label=label
        )
        deadline = self._deadline(timeout)
        response = yield Send(Call("MultiInference", request, model, _asked(version, label)), deadline)
        return multi_inference_result(response)

    def _metadata_flow(
        self, model: str, version: int | None, label: str | None, deadline: float | None
    ) -> Flow[ModelMetadata]:
        request = metadata_request(model, version=version, label=label)
        response = yield Send(Call("GetModelMetadata", request, model, _asked(version, label)), deadline)
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
            meta = yield from self._metadata_flow(model, None, label, deadline)
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

    def _reload_flow(self, config: Any, timeout: Any) -> Flow[None]:
        deadline = self._deadline(timeout)
        response = yield Send(Call("HandleReloadConfigRequest", reload_request(config)), deadline)
        check_reload(response)
        self._metadata.drop()


def _asked(version: int | None, label: str | None) -> int | str | None:
    """The version or label a call names, for error messages."""
    return version if version is not None else label


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
