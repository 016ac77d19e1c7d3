"""``ServingClient``: a typed, fast TensorFlow Serving gRPC client that is hard to misuse.

Request builders and input validation live in ``_calls.py``, result types and the mapping of
answers to them in ``_results.py``; the channel, stub, retry and metadata-cache helpers here are
shared with the asyncio client (``_aio.py``) and, where they apply, the REST transport
(``_rest.py``).
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tfship._wire import protos
from tfship.serve_client._calls import (
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
    wait_until_available,
)
from tfship.serve_client._errors import (
    DeadlineExceededError,
    InvalidInputError,
    ModelNotFoundError,
    ServingCallError,
    ServingSignatureNotFoundError,
    UnimplementedError,
    error_from_status,
    rpc_errors,
)
from tfship.serve_client._results import (
    ClassifyResult,
    ModelMetadata,
    ModelSpec,
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
)

if TYPE_CHECKING:
    from tfship.serve_client._batching import BatchingConfig, MicroBatcher

__all__ = [
    "DEFAULT",
    "ClassifyResult",
    "ModelMetadata",
    "ModelSpec",
    "MultiInferenceResult",
    "PredictResult",
    "RegressResult",
    "RetryPolicy",
    "ServingClient",
    "TLSConfig",
    "VersionStatus",
]

logger = logging.getLogger(__name__)

PREDICTION_SERVICE = "/tensorflow.serving.PredictionService/"
MODEL_SERVICE = "/tensorflow.serving.ModelService/"
_NEVER_RETRY = frozenset({"INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"})
_METADATA_TTL = 60.0


class _Default:
    """Sentinel type of :data:`DEFAULT`: "use the client's timeout"."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()
"""Per-call ``timeout=DEFAULT`` means the client's timeout; ``None`` means no deadline."""

T = TypeVar("T")


# ------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class RetryPolicy:
    """Retries with capped exponential backoff and jitter, inside the call's overall deadline.

    Attempt ``n`` (1-based) that fails with a retryable code sleeps
    ``min(max_backoff, initial_backoff * multiplier ** (n - 1))`` scaled by a random factor in
    ``[1 - jitter, 1]``, unless the deadline would pass first. ``INVALID_ARGUMENT``,
    ``NOT_FOUND`` and ``FAILED_PRECONDITION`` are never retried: sending again cannot help.

    Example:
        >>> RetryPolicy(attempts=3).delay(2, random.Random(0)) <= 0.1
        True
    """

    attempts: int = 5
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.5
    retry_on: frozenset[str] = frozenset({"UNAVAILABLE"})

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must be within [0, 1], got {self.jitter}")
        forbidden = sorted(self.retry_on & _NEVER_RETRY)
        if forbidden:
            raise ValueError(f"codes {forbidden} are never retried: the same request fails again")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to sleep after failed attempt number ``attempt`` (1-based)."""
        cap = min(self.max_backoff, self.initial_backoff * self.multiplier ** (attempt - 1))
        return cap * (1.0 - self.jitter * rng.random())


DEFAULT_RETRIES = RetryPolicy()
"""The default: 5 attempts, 50 ms doubling up to 2 s, half jitter, on UNAVAILABLE only."""


@dataclass(frozen=True)
class TLSConfig:
    """TLS (or mutual TLS with ``client_cert`` + ``client_key``) for the channel.

    Each certificate is PEM bytes or a path to a PEM file; ``ca_cert=None`` trusts the system
    roots. ``server_name`` overrides the name checked against the server's certificate.

    Example:
        >>> TLSConfig(ca_cert=b"-----BEGIN CERTIFICATE-----...").server_name is None
        True
    """

    ca_cert: bytes | str | Path | None = None
    client_cert: bytes | str | Path | None = None
    client_key: bytes | str | Path | None = None
    server_name: str | None = None

    def credentials(self) -> Any:
        """The ``grpc.ChannelCredentials`` for this configuration."""
        import grpc

        if (self.client_cert is None) != (self.client_key is None):
            raise ValueError("mutual TLS needs both client_cert and client_key")
        return grpc.ssl_channel_credentials(
            root_certificates=_pem(self.ca_cert),
            private_key=_pem(self.client_key),
            certificate_chain=_pem(self.client_cert),
        )


def _pem(value: bytes | str | Path | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return Path(value).read_bytes()


# ------------------------------------------------------------------------------- channel


def channel_options(
    max_message_bytes: int, keepalive: float | None, extra: Sequence[tuple[str, Any]]
) -> list[tuple[str, Any]]:
    """gRPC channel options: TF Serving's 2 GiB message limit, keepalive, quick reconnects."""
    options: list[tuple[str, Any]] = [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        # A down server is retried by us with backoff; gRPC's own reconnect backoff (1 s up to
        # 2 min by default) would make every retry fail fast without trying to connect.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    ]
    if keepalive is not None:
        options += [
            ("grpc.keepalive_time_ms", int(keepalive * 1000)),
            ("grpc.keepalive_timeout_ms", 20000),
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.http2.max_pings_without_data", 0),
        ]
    names = {name for name, _ in extra}
    return [opt for opt in options if opt[0] not in names] + list(extra)


def tls_credentials(tls: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """(channel credentials or None, extra options) for ``tls=`` (bool, TLSConfig, credentials)."""
    import grpc

    if tls is None or tls is False:
        return None, []
    if tls is True:
        return grpc.ssl_channel_credentials(), []
    if isinstance(tls, TLSConfig):
        extra = []
        if tls.server_name:
            extra.append(("grpc.ssl_target_name_override", tls.server_name))
        return tls.credentials(), extra
    if isinstance(tls, grpc.ChannelCredentials):
        return tls, []
    raise TypeError(f"tls must be a bool, TLSConfig or grpc.ChannelCredentials, got {tls!r}")


def resolve_retries(retries: int | RetryPolicy | None) -> RetryPolicy:
    if retries is None:
        return RetryPolicy(attempts=1)
    if isinstance(retries, RetryPolicy):
        return retries
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be a RetryPolicy or an int >= 0, got {retries!r}")
    return RetryPolicy(attempts=retries + 1)


def open_channel(
    grpc_module: Any,
    target: str,
    tls: Any,
    max_message_bytes: int,
    keepalive: float | None,
    options: Sequence[tuple[str, Any]],
) -> Any:
    """A channel of ``grpc_module`` (``grpc`` or ``grpc.aio``) with our options and ``tls=``."""
    creds, tls_options = tls_credentials(tls)
    all_options = channel_options(max_message_bytes, keepalive, [*tls_options, *options])
    if creds is None:
        return grpc_module.insecure_channel(target, options=all_options)
    return grpc_module.secure_channel(target, creds, options=all_options)


def grpc_headers(headers: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """Call metadata: gRPC wants lower-case keys."""
    return tuple((k.lower(), v) for k, v in (headers or {}).items())


def stub_for(channel: Any, method: str, stubs: dict[str, Any]) -> Any:
    """The unary-unary callable of ``method`` on ``channel``, made once and kept in ``stubs``."""
    stub = stubs.get(method)
    if stub is None:
        service, _ = _RESPONSES[method]
        stub = channel.unary_unary(
            service + method,
            request_serializer=_serialize,
            response_deserializer=response_parser(method),
        )
        stubs[method] = stub
    return stub


def deadline_for(timeout: Any, default: float | None) -> float | None:
    """The monotonic deadline of a call given ``timeout=`` (``DEFAULT``: the client's)."""
    budget = default if timeout is DEFAULT else timeout
    return None if budget is None else time.monotonic() + budget


def _identity(data: bytes) -> bytes:
    return data


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


# Method -> (service path, response class attribute path or None for raw bytes)
_RESPONSES: dict[str, tuple[str, str | None]] = {
    "Predict": (PREDICTION_SERVICE, None),
    "Classify": (PREDICTION_SERVICE, "classification_pb2.ClassificationResponse"),
    "Regress": (PREDICTION_SERVICE, "regression_pb2.RegressionResponse"),
    "MultiInference": (PREDICTION_SERVICE, "inference_pb2.MultiInferenceResponse"),
    "GetModelMetadata": (PREDICTION_SERVICE, "get_model_metadata_pb2.GetModelMetadataResponse"),
    "GetModelStatus": (MODEL_SERVICE, "get_model_status_pb2.GetModelStatusResponse"),
    "HandleReloadConfigRequest": (MODEL_SERVICE, "model_management_pb2.ReloadConfigResponse"),
}


def response_parser(method: str) -> Callable[[bytes], Any]:
    _, cls_path = _RESPONSES[method]
    if cls_path is None:
        return _identity
    module, cls = cls_path.split(".")
    parser: Callable[[bytes], Any] = getattr(getattr(protos(), module), cls).FromString
    return parser


# -------------------------------------------------------------------------------- client


class _MetadataCache:
    """Signatures per (model, version, label), fetched once and kept ``_METADATA_TTL`` seconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, int | None, str | None], tuple[float, dict[str, Any]]] = {}

    def get(self, key: tuple[str, int | None, str | None]) -> dict[str, Any] | None:
        with self._lock:
            item = self._items.get(key)
        if item is None or time.monotonic() - item[0] > _METADATA_TTL:
            return None
        return item[1]

    def put(self, key: tuple[str, int | None, str | None], value: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = (time.monotonic(), value)

    def fetch(
        self, key: tuple[str, int | None, str | None], load: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """The cached signatures of ``key``, or ``load()``-ed and kept."""
        cached = self.get(key)
        if cached is None:
            cached = load()
            self.put(key, cached)
        return cached

    def drop(self, model: str) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == model]:
                del self._items[key]


class _ClientCore:
    """What every client keeps besides its transport: call defaults, retries, validation
    switches and the signatures cache."""

    def __init__(
        self, *, timeout: float | None, retries: int | RetryPolicy | None, validate: bool, cast: bool
    ) -> None:
        self.timeout = timeout
        self.retry_policy = resolve_retries(retries)
        self.validate = validate
        self.cast = cast
        self._metadata = _MetadataCache()
        self._rng = random.Random()
        self._closed = False


class ServingClient(_ClientCore):
    """A TensorFlow Serving gRPC client: typed results, deadlines, retries, validation.

    Args:
        target: ``host:port``, ``unix:/path/to.sock`` or any gRPC target.
        timeout: default deadline of each call in seconds (``None``: no deadline).
        retries: a :class:`RetryPolicy`, or the number of retries on ``UNAVAILABLE``.
        tls: ``True`` (system roots), a :class:`TLSConfig` or ``grpc.ChannelCredentials``.
        max_message_bytes: send and receive limit; TF Serving allows 2 GiB - 1.
        options: extra gRPC channel options; they override the defaults.
        headers: metadata sent with every call (e.g. an authorization token).
        keepalive: seconds between keepalive pings during calls (``None``: gRPC's default).
        validate: check inputs against the signature (fetched once per model) before sending.
        cast: let numpy inputs be cast to the signature's dtype within the same kind
            (float64 -> float32, int64 -> int32); off by default, as TF Serving refuses them.
        batching: a :class:`~tfship.serve_client.BatchingConfig` to merge concurrent predicts.

    Example:
        >>> with ServingClient("127.0.0.1:8500") as client:  # doctest: +SKIP
        ...     result = client.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]})
        ...     result.as_numpy("scores"), result.model_spec.version
    """

    def __init__(
        self,
        target: str,
        *,
        timeout: float | None = 30.0,
        retries: int | RetryPolicy | None = DEFAULT_RETRIES,
        tls: Any = None,
        max_message_bytes: int = 2**31 - 1,
        options: Sequence[tuple[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
        keepalive: float | None = 60.0,
        validate: bool = True,
        cast: bool = False,
        batching: BatchingConfig | None = None,
    ) -> None:
        import grpc

        self.target = target
        super().__init__(timeout=timeout, retries=retries, validate=validate, cast=cast)
        self.headers = grpc_headers(headers)
        self._channel = open_channel(grpc, target, tls, max_message_bytes, keepalive, options)
        self._calls: dict[str, Any] = {}
        self._pid = os.getpid()
        self._batcher: MicroBatcher | None = None
        if batching is not None:
            from tfship.serve_client._batching import MicroBatcher

            self._batcher = MicroBatcher(self._predict_now, batching)

    # -- lifecycle
    def __enter__(self) -> ServingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._batcher is not None:
            self._batcher.close()
        self._channel.close()

    def __repr__(self) -> str:
        return f"ServingClient({self.target!r}, timeout={self.timeout})"

    # -- the one place RPCs are sent
    def _call(
        self,
        method: str,
        request: Any,
        *,
        model: str | None,
        version: int | str | None,
        timeout: Any,
    ) -> Any:
        if self._closed:
            raise RuntimeError("this ServingClient is closed")
        if os.getpid() != self._pid:
            # A gRPC channel does not survive fork(): calls from the child hang or fail oddly.
            raise RuntimeError(
                f"this ServingClient was created in process {self._pid}; gRPC channels do not "
                "survive fork(): create a new ServingClient in each worker process"
            )
        stub = stub_for(self._channel, method, self._calls)
        return run_with_retries(
            lambda remaining: stub(request, timeout=remaining, metadata=self.headers or None),
            policy=self.retry_policy,
            deadline=deadline_for(timeout, self.timeout),
            rng=self._rng,
            sleep=time.sleep,
            context={"model": model, "version": version, "method": method},
        )

    # -- metadata used for validation
    def _signatures(self, model: str, version: int | None, label: str | None) -> dict[str, Any] | None:
        if not self.validate:
            return None
        try:
            return self._metadata.fetch(
                (model, version, label), lambda: self.metadata(model, version=version, label=label).signatures
            )
        except UnimplementedError:
            return None  # a server without metadata: validation is best effort

    # -- RPCs
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
        """Run a signature on inputs and return its outputs as numpy arrays.

        Args:
            model: the model name.
            inputs: input name -> array / list / scalar; a bare array for a one-input signature.
            signature: signature key (default ``serving_default``).
            version: a version number; ``None`` asks for the latest loaded version.
            label: a version label (``stable``); not with ``version``.
            output_filter: output names to compute and return (default: all).
            timeout: seconds for this call; ``DEFAULT`` = the client's, ``None`` = no deadline.

        Returns:
            A :class:`PredictResult`.

        Raises:
            InvalidInputError: names, dtypes or ranks do not fit the signature (checked before
                sending when ``validate``), or the server rejects the inputs.
            ModelNotFoundError, VersionNotFoundError, ServingSignatureNotFoundError,
            DeadlineExceededError, UnavailableError: as the server answers.

        Example:
            >>> client.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]}).outputs  # doctest: +SKIP
        """
        if self._batcher is not None:
            batched: PredictResult = self._batcher.submit(
                model,
                inputs,
                signature=signature,
                version=version,
                label=label,
                output_filter=output_filter,
                timeout=timeout,
            )
            return batched
        return self._predict_now(
            model,
            inputs,
            signature=signature,
            version=version,
            label=label,
            output_filter=output_filter,
            timeout=timeout,
        )

    def _predict_now(
        self,
        model: str,
        inputs: Any,
        *,
        signature: str | None,
        version: int | None,
        label: str | None,
        output_filter: Sequence[str] | None,
        timeout: Any,
    ) -> PredictResult:
        sig = pick_signature(self._signatures(model, version, label), signature, model)
        request = predict_request(
            model,
            predict_inputs(inputs, sig, model, signature, cast=self.cast, output_filter=output_filter),
            signature=signature,
            version=version,
            label=label,
            output_filter=output_filter,
        )
        try:
            data = self._call("Predict", request, model=model, version=version or label, timeout=timeout)
        except (InvalidInputError, ModelNotFoundError, ServingSignatureNotFoundError):
            # The served signature may have changed under us (a new version): fetch it again.
            self._metadata.drop(model)
            raise
        return predict_result(data)

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
        """Classify records (dicts or ``tf.train.Example``) with a classification signature.

        ``context`` is a record merged into every example (the example's features win);
        ``schema`` (a ``tfship.schema.Schema``) converts dict records with its dtypes and defaults.

        Example:
            >>> client.classify("penguins", [{"island": "Dream"}]).classes[0]  # doctest: +SKIP
        """
        request = examples_request("Classify", model, examples, context, signature, version, label, schema)
        response = self._call("Classify", request, model=model, version=version or label, timeout=timeout)
        return classify_result(response.result, response.model_spec, response)

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
        """Regress records (dicts or ``tf.train.Example``) with a regression signature.

        Example:
            >>> client.regress("prices", [{"rooms": 3}]).values  # doctest: +SKIP
        """
        request = examples_request("Regress", model, examples, context, signature, version, label, schema)
        response = self._call("Regress", request, model=model, version=version or label, timeout=timeout)
        return regress_result(response.result, response.model_spec, response)

    def multi_inference(
        self,
        model: str,
        examples: Iterable[Any],
        tasks: Sequence[tuple[str, str]],
        *,
        context: Any = None,
        version: int | None = None,
        label: str | None = None,
        schema: Any = None,
        timeout: Any = DEFAULT,
    ) -> MultiInferenceResult:
        """Run several classify/regress signatures on the same examples in one call.

        Args:
            tasks: (signature key, ``"classify"`` | ``"regress"``) pairs, answered in order.

        Example:
            >>> client.multi_inference("m", rows, [("classification", "classify")])  # doctest: +SKIP
        """
        request = multi_inference_request(
            model, examples_input(examples, context, schema), tasks, version=version, label=label
        )
        response = self._call(
            "MultiInference", request, model=model, version=version or label, timeout=timeout
        )
        return multi_inference_result(response)

    def metadata(
        self,
        model: str,
        *,
        version: int | None = None,
        label: str | None = None,
        timeout: Any = DEFAULT,
    ) -> ModelMetadata:
        """The served model's signatures, as ``tfship.inspect.SignatureInfo`` objects.

        Example:
            >>> sorted(client.metadata("iris").signatures)  # doctest: +SKIP
            ['__saved_model_init_op', 'serving_default']
        """
        request = metadata_request(model, version=version, label=label)
        response = self._call(
            "GetModelMetadata", request, model=model, version=version or label, timeout=timeout
        )
        return metadata_result(response)

    def status(
        self, model: str, *, version: int | None = None, timeout: Any = DEFAULT
    ) -> list[VersionStatus]:
        """The state of each version of the model the server tracks, newest first.

        Example:
            >>> client.status("iris")  # doctest: +SKIP
            [VersionStatus(version=2, state='AVAILABLE', error_code='OK', error_message='')]
        """
        request = status_request(model, version=version)
        response = self._call("GetModelStatus", request, model=model, version=version, timeout=timeout)
        return status_list(response)

    def wait_until_available(
        self,
        model: str,
        version: int | None = None,
        *,
        timeout: float = 60.0,
        poll: float = 0.1,
    ) -> VersionStatus:
        """Block until the model (or that version) is AVAILABLE; return its status.

        Raises:
            DeadlineExceededError: not available within ``timeout``; says the last state seen.
            ModelLoadFailedError: the version ended (END) with a load error.

        Example:
            >>> client.wait_until_available("iris", timeout=30).version  # doctest: +SKIP
            2
        """
        return wait_until_available(self.status, Waiter(model, version, timeout, poll))

    def reload_config(self, config: Any, *, timeout: Any = DEFAULT) -> None:
        """Replace the server's model list (``HandleReloadConfigRequest``).

        Args:
            config: a ``ModelServerConfig``/``ModelConfigList`` or a list of dicts in
                ``ModelConfig`` JSON form (``{"name": ..., "base_path": ...,
                "model_platform": "tensorflow"}``); models left out are unloaded.

        Example:
            >>> client.reload_config([{"name": "iris", "base_path": "/models/iris",
            ...                        "model_platform": "tensorflow"}])  # doctest: +SKIP
        """
        response = self._call(
            "HandleReloadConfigRequest",
            reload_request(config),
            model=None,
            version=None,
            timeout=timeout,
        )
        check_reload(response)
        self._metadata = _MetadataCache()


def run_with_retries(
    attempt: Callable[[float | None], T],
    *,
    policy: RetryPolicy,
    deadline: float | None,
    rng: random.Random,
    sleep: Callable[[float], None],
    context: Mapping[str, Any],
) -> T:
    """Call ``attempt(remaining_seconds)`` until it succeeds, a non-retryable error, the
    attempt budget or the deadline; gRPC errors leave as ServingCallError subclasses."""
    retry = RetryState(policy, deadline, rng, context)
    while True:
        remaining = retry.next_attempt()
        try:
            with rpc_errors(**context):
                return attempt(remaining)
        except ServingCallError as exc:
            delay = retry.delay_after(exc)
            logger.debug(
                "%s failed with %s; retry %d in %.3f s", context.get("method"), exc.code, retry.number, delay
            )
            sleep(delay)


class RetryState:
    """One call's attempts: the time left before each, and the backoff (or giving up) after a
    failure. The sync and async retry loops share it and differ only in how they wait."""

    def __init__(
        self, policy: RetryPolicy, deadline: float | None, rng: random.Random, context: Mapping[str, Any]
    ) -> None:
        self.policy = policy
        self.deadline = deadline
        self.rng = rng
        self.context = context
        self.number = 0

    def next_attempt(self) -> float | None:
        """Count an attempt; the seconds left for it (None: no deadline), or DeadlineExceededError."""
        self.number += 1
        remaining = None if self.deadline is None else self.deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise _deadline_error(self.context, self.number - 1)
        return remaining

    def delay_after(self, exc: ServingCallError) -> float:
        """Seconds to wait before the next attempt; re-raises ``exc`` when retrying cannot help."""
        delay = _retry_delay(exc, self.number, self.policy, self.deadline, self.rng)
        if delay is None:
            if self.number > 1:
                exc.args = (f"{exc.args[0]} (after {self.number} attempts)",)
            raise exc
        return delay


def _retry_delay(
    exc: ServingCallError,
    number: int,
    policy: RetryPolicy,
    deadline: float | None,
    rng: random.Random,
) -> float | None:
    if exc.code not in policy.retry_on or number >= policy.attempts:
        return None
    delay = policy.delay(number, rng)
    if deadline is not None and time.monotonic() + delay >= deadline:
        return None
    return delay


def _deadline_error(context: Mapping[str, Any], attempts: int) -> DeadlineExceededError:
    err = error_from_status(
        "DEADLINE_EXCEEDED",
        f"deadline passed before attempt {attempts + 1}",
        model=context.get("model"),
        version=context.get("version"),
        method=context.get("method", ""),
    )
    assert isinstance(err, DeadlineExceededError)
    return err
