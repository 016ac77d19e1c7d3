"""``ServingClient``: a typed TensorFlow Serving client over a transport (gRPC, REST, in-process).

Every call is a flow of ``_base.BaseClient`` (requests, validation, the signatures cache,
results); this module runs flows with blocking sends, retries with backoff inside the call's
deadline, and merges concurrent predicts when batching is on. ``RestServingClient`` is the
same client over the REST transport.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tfship.serve_client._base import (
    BaseClient,
    ExamplesCall,
    Flow,
    ModelRef,
    MultiInferenceCall,
    PredictCall,
    Send,
    T,
    run_flow,
)
from tfship.serve_client._calls import ReloadConfig
from tfship.serve_client._errors import ServingCallError
from tfship.serve_client._options import (
    DEFAULT,
    DEFAULT_RETRIES,
    RetryPolicy,
    Timeout,
    Tls,
    names_valid_keywords,
)
from tfship.serve_client._results import (
    ClassifyResult,
    ModelMetadata,
    MultiInferenceResult,
    PredictResult,
    RegressResult,
    VersionStatus,
)
from tfship.serve_client._transports import RestTransport, Transport, transport_for

if TYPE_CHECKING:
    from tfship.schema import Schema
    from tfship.serve_client._batching import MicroBatcher, MicroBatchingOptions

__all__ = ["RestServingClient", "ServingClient"]

# ``Self`` on Python 3.9 without typing_extensions: ``with RestServingClient(...) as c`` types c as one
_Client = TypeVar("_Client", bound="ServingClient")


class ServingClient(BaseClient):
    """A TF Serving client: typed results, a deadline on every call, retries, validation.

    The transport comes from ``target``: ``host:port`` or ``unix:PATH`` is gRPC,
    ``http://host:port`` (or ``https://``) is TF Serving's REST API; ``transport=`` takes a
    ready one (``GrpcTransport``, ``RestTransport``, ``InProcessTransport``). Every method
    works on every transport, except what TF Serving's REST API lacks (MultiInference and
    config reload raise ``UnimplementedError`` there).

    Args:
        target: the server's address (see above); not with ``transport``.
        transport: a transport object instead of ``target``.
        timeout: default deadline of each call in seconds (``None``: no deadline).
        retries: a :class:`RetryPolicy`, or the number of retries on ``UNAVAILABLE``.
        tls: ``True``, a :class:`TlsConfig` or (gRPC) ``grpc.ChannelCredentials``.
        max_message_bytes: gRPC send/receive limit (TF Serving's is 2 GiB).
        options: extra gRPC channel options, which win over ours.
        headers: metadata (gRPC) or HTTP headers sent with every call.
        keepalive: seconds between gRPC keepalive pings (``None``: off).
        validate: check inputs against the served signature before sending.
        cast: let numpy inputs be cast to the signature's dtype when no value changes.
        batching: merge concurrent ``predict`` calls (a :class:`MicroBatchingOptions`).

    Example:
        >>> with ServingClient("127.0.0.1:8500", timeout=10) as client:  # doctest: +SKIP
        ...     result = client.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]})
        ...     result.as_numpy("scores"), result.model_spec.version
    """

    transport: Transport

    def __init__(
        self,
        target: str | None = None,
        *,
        transport: Transport | None = None,
        timeout: float | None = 30.0,
        retries: int | RetryPolicy | None = DEFAULT_RETRIES,
        tls: Tls = None,
        max_message_bytes: int = 2**31 - 1,
        options: Sequence[tuple[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
        keepalive: float | None = 60.0,
        validate: bool = True,
        cast: bool = False,
        batching: MicroBatchingOptions | None = None,
    ) -> None:
        if transport is None:
            transport = transport_for(
                target,
                asynchronous=False,
                tls=tls,
                headers=headers,
                max_message_bytes=max_message_bytes,
                options=options,
                keepalive=keepalive,
                max_connections=16,
            )
        elif target is not None:
            raise ValueError("give target or transport=, not both")
        super().__init__(transport, timeout=timeout, retries=retries, validate=validate, cast=cast)
        self._batcher: MicroBatcher | None = None
        if batching is not None:
            from tfship.serve_client._batching import MicroBatcher

            self._batcher = MicroBatcher(self._predict_now, batching)

    # -- lifecycle
    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the transport's connections; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        self.transport.close()

    # -- running flows: the one place calls are sent
    def _run(self, flow: Flow[T]) -> T:
        self._check_open()
        return run_flow(flow, self._send, time.sleep)

    def _send(self, step: Send) -> Any:
        retry = self._retry_state(step)
        while True:
            remaining = retry.next_attempt()
            try:
                return self.transport.send(step.call, remaining)
            except ServingCallError as exc:
                time.sleep(retry.delay_after(exc))

    # -- the API
    @names_valid_keywords
    def predict(
        self,
        model: str,
        inputs: Any,
        *,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        output_filter: Sequence[str] | None = None,
        schema: Schema | None = None,
        timeout: Timeout = DEFAULT,
    ) -> PredictResult:
        """Run a signature on inputs and return its outputs as numpy arrays.

        Args:
            model: the model name.
            inputs: input name -> array / list / scalar; a bare array for a one-input signature;
                a pandas DataFrame (one input per column); or records (a list of dicts) for a
                signature whose one input takes serialized ``tf.train.Example`` s (a parsing
                export's ``examples``): the client builds the Examples.
            signature: signature key (default ``serving_default``).
            version: a version number; ``None`` asks for the latest loaded version.
            label: a version label (``stable``); not with ``version``.
            output_filter: output names to compute and return (default: all).
            schema: a ``tfship.schema.Schema`` typing records as the model's features; without
                one, values are typed by their Python type (int -> int64, float -> float).
            timeout: seconds for this whole call (building the request and reading the answer
                included); ``DEFAULT`` = the client's, ``None`` = no deadline.

        Returns:
            A :class:`PredictResult`.

        Raises:
            InvalidInputError: names, dtypes or shapes do not fit the signature (checked before
                sending when ``validate``), or the server rejects the inputs.
            ServingCallError: as the server answers (``ModelNotFoundError``,
                ``VersionNotFoundError``, ``ServingSignatureNotFoundError``,
                ``DeadlineExceededError``, ``UnavailableError``).

        Example:
            >>> client.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]}).outputs  # doctest: +SKIP
            >>> client.predict("custom", [{"bill": 41.5, "island": "Dream"}]).outputs  # doctest: +SKIP
        """
        call = PredictCall(
            model,
            inputs,
            signature=signature,
            version=version,
            label=label,
            output_filter=output_filter,
            timeout=timeout,
            schema=schema,
        )
        if self._batcher is not None:
            return self._batcher.submit(call)
        return self._predict_now(call)

    def _predict_now(self, call: PredictCall) -> PredictResult:
        return self._run(self._predict_flow(call))

    @names_valid_keywords
    def classify(
        self,
        model: str,
        examples: Iterable[Any],
        *,
        context: Any = None,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        schema: Schema | None = None,
        timeout: Timeout = DEFAULT,
    ) -> ClassifyResult:
        """Classify records (dicts or ``tf.train.Example``) with a classification signature.

        ``context`` is a record merged into every example (the example's features win);
        ``schema`` (a ``tfship.schema.Schema``) converts dict records with its dtypes and defaults.

        Example:
            >>> client.classify("penguins", [{"island": "Dream"}]).classes[0]  # doctest: +SKIP
        """
        return self._run(
            self._classify_flow(
                ExamplesCall(
                    model,
                    examples,
                    context=context,
                    signature=signature,
                    version=version,
                    label=label,
                    schema=schema,
                    timeout=timeout,
                )
            )
        )

    @names_valid_keywords
    def regress(
        self,
        model: str,
        examples: Iterable[Any],
        *,
        context: Any = None,
        signature: str | None = None,
        version: int | None = None,
        label: str | None = None,
        schema: Schema | None = None,
        timeout: Timeout = DEFAULT,
    ) -> RegressResult:
        """Regress records (dicts or ``tf.train.Example``) with a regression signature.

        Example:
            >>> client.regress("prices", [{"rooms": 3}]).values  # doctest: +SKIP
            array([0.5], dtype=float32)
        """
        return self._run(
            self._regress_flow(
                ExamplesCall(
                    model,
                    examples,
                    context=context,
                    signature=signature,
                    version=version,
                    label=label,
                    schema=schema,
                    timeout=timeout,
                )
            )
        )

    @names_valid_keywords
    def multi_inference(
        self,
        model: str,
        examples: Iterable[Any],
        tasks: Sequence[tuple[str, str]],
        *,
        context: Any = None,
        version: int | None = None,
        label: str | None = None,
        schema: Schema | None = None,
        timeout: Timeout = DEFAULT,
    ) -> MultiInferenceResult:
        """Run several classify/regress signatures on the same examples in one call (not over REST).

        Args:
            tasks: (signature key, ``"classify"`` | ``"regress"``) pairs, answered in order.

        Example:
            >>> client.multi_inference("m", rows, [("classification", "classify")])  # doctest: +SKIP
        """
        return self._run(
            self._multi_inference_flow(
                MultiInferenceCall(
                    model,
                    examples,
                    tasks,
                    context=context,
                    version=version,
                    label=label,
                    schema=schema,
                    timeout=timeout,
                )
            )
        )

    @names_valid_keywords
    def metadata(
        self,
        model: str,
        *,
        version: int | None = None,
        label: str | None = None,
        timeout: Timeout = DEFAULT,
    ) -> ModelMetadata:
        """The served model's signatures, as ``tfship.inspect.SignatureInfo`` objects.

        ``__saved_model_init_op``, which TF2 exports list and no call can run, is left out
        (``.raw`` has it).

        Example:
            >>> sorted(client.metadata("iris").signatures)  # doctest: +SKIP
            ['serving_default']
        """
        return self._run(self._metadata_flow(ModelRef(model, version, label), self._deadline(timeout)))

    @names_valid_keywords
    def status(
        self,
        model: str,
        *,
        version: int | None = None,
        labels: Sequence[str] = (),
        timeout: Timeout = DEFAULT,
    ) -> list[VersionStatus]:
        """The state of each version of the model the server tracks, newest first.

        TF Serving's status answer names no labels; ``labels`` are looked up one by one (the
        metadata of ``label=...`` names its version) and shown on the versions they point at.

        Example:
            >>> client.status("iris", labels=["stable"])[0].labels  # doctest: +SKIP
            ('stable',)
        """
        return self._run(self._status_flow(model, version, self._deadline(timeout), labels))

    @names_valid_keywords
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
        return self._run(self._wait_flow(model, version, timeout, poll))

    def reload_config(self, config: ReloadConfig, *, timeout: Timeout = DEFAULT) -> None:
        """Replace the server's model list (``HandleReloadConfigRequest``; not over REST).

        Args:
            config: a ``ModelServerConfig``/``ModelConfigList`` or a list of dicts in
                ``ModelConfig`` JSON form (``{"name": ..., "base_path": ...,
                "model_platform": "tensorflow"}``); models left out are unloaded.

        Example:
            >>> client.reload_config([{"name": "iris", "base_path": "/models/iris",
            ...                        "model_platform": "tensorflow"}])  # doctest: +SKIP
        """
        self._run(self._reload_flow(config, timeout))


class RestServingClient(ServingClient):
    """:class:`ServingClient` over TF Serving's REST API (``/v1/models/...``), connections kept open.

    The same methods, results and errors; what REST itself lacks is noted on
    :class:`RestTransport` (answers name the servable asked for; no MultiInference or reload).

    Args:
        url: ``http://host:port`` (``host:port`` is accepted; ``https`` when ``tls`` is set).
        tls: ``True`` or a :class:`TlsConfig` (CA and client certificate as PEM files or bytes).
        headers: HTTP headers sent with every call.
        max_connections: connections kept open at most (one per concurrent call).

    The other options are :class:`ServingClient`'s.

    Example:
        >>> with RestServingClient("http://127.0.0.1:8501") as rest:  # doctest: +SKIP
        ...     rest.predict("iris", {"x": [[5.1, 3.5, 1.4, 0.2]]}).as_numpy("scores")
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float | None = 30.0,
        retries: int | RetryPolicy | None = DEFAULT_RETRIES,
        tls: Tls = None,
        headers: Mapping[str, str] | None = None,
        validate: bool = True,
        cast: bool = False,
        batching: MicroBatchingOptions | None = None,
        max_connections: int = 16,
    ) -> None:
        transport = RestTransport(url, tls=tls, headers=headers, max_connections=max_connections)
        super().__init__(
            transport=transport,
            timeout=timeout,
            retries=retries,
            validate=validate,
            cast=cast,
            batching=batching,
        )
