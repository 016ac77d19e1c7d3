"""``AsyncServingClient``: the ``ServingClient`` API as coroutines on ``grpc.aio``.

A semaphore bounds the requests in flight (``max_in_flight``): thousands of ``gather``-ed
calls queue client-side instead of flooding the server. Requests, results, errors, retries
and validation are shared with the sync client (``_calls.py``, ``_client.py``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from tfship.serve_client._batching import AsyncMicroBatcher, BatchingConfig
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
from tfship.serve_client._client import (
    DEFAULT,
    DEFAULT_RETRIES,
    RetryPolicy,
    RetryState,
    _ClientCore,
    _MetadataCache,
    deadline_for,
    grpc_headers,
    open_channel,
    stub_for,
)
from tfship.serve_client._errors import (
    InvalidInputError,
    ModelNotFoundError,
    ServingCallError,
    ServingSignatureNotFoundError,
    UnimplementedError,
    rpc_errors,
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
)

__all__ = ["AsyncServingClient"]

T = TypeVar("T")


class AsyncServingClient(_ClientCore):
    """The :class:`ServingClient` API on asyncio, with a bound on requests in flight.

    Create it inside a running event loop; options are the sync client's, plus
    ``max_in_flight`` (calls beyond it wait their turn client-side). With ``batching``,
    concurrent ``predict`` calls are merged into fewer requests.

    Example:
        >>> async with AsyncServingClient("127.0.0.1:8500", max_in_flight=32) as client:  # doctest: +SKIP
        ...     results = await asyncio.gather(*(client.predict("m", {"x": row}) for row in rows))
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
        max_in_flight: int = 64,
        batching: BatchingConfig | None = None,
    ) -> None:
        import grpc.aio

        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.target = target
        super().__init__(timeout=timeout, retries=retries, validate=validate, cast=cast)
        self.max_in_flight = max_in_flight
        self.headers = grpc_headers(headers)
        self._channel = open_channel(grpc.aio, target, tls, max_message_bytes, keepalive, options)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._calls: dict[str, Any] = {}
        self._batcher = None if batching is None else AsyncMicroBatcher(self._predict_now, batching)
        self.in_flight = 0
        self.peak_in_flight = 0

    async def __aenter__(self) -> AsyncServingClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channel; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        await self._channel.close()

    def __repr__(self) -> str:
        return f"AsyncServingClient({self.target!r}, max_in_flight={self.max_in_flight})"

    async def _call(self, method: str, request: Any, *, model: str | None, version: Any, timeout: Any) -> Any:
        if self._closed:
            raise RuntimeError("this AsyncServingClient is closed")
        stub = stub_for(self._channel, method, self._calls)
        deadline = deadline_for(timeout, self.timeout)
        context = {"model": model, "version": version, "method": method}

        async def attempt(remaining: float | None) -> Any:
            async with self._slots:
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    return await stub(request, timeout=remaining, metadata=self.headers or None)
                finally:
                    self.in_flight -= 1

        return await _with_retries(attempt, self.retry_policy, deadline, self._rng, context)

    async def _signatures(self, model: str, version: Any, label: Any) -> dict[str, Any] | None:
        if not self.validate:
            return None
        key = (model, version, label)
        cached = self._metadata.get(key)
        if cached is None:
            try:
                cached = (await self.metadata(model, version=version, label=label)).signatures
            except UnimplementedError:
                return None
            self._metadata.put(key, cached)
        return cached

    async def predict(
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
        """Like :meth:`ServingClient.predict` (merged with concurrent calls under ``batching``)."""
        call = {
            "signature": signature,
            "version": version,
            "label": label,
            "output_filter": output_filter,
            "timeout": timeout,
        }
        if self._batcher is not None:
            batched: PredictResult = await self._batcher.submit(model, inputs, **call)
            return batched
        return await self._predict_now(model, inputs, **call)

    async def _predict_now(
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
        sig = pick_signature(await self._signatures(model, version, label), signature, model)
        request = predict_request(
            model,
            predict_inputs(inputs, sig, model, signature, cast=self.cast, output_filter=output_filter),
            signature=signature,
            version=version,
            label=label,
            output_filter=output_filter,
        )
        try:
            data = await self._call(
                "Predict", request, model=model, version=version or label, timeout=timeout
            )
        except (InvalidInputError, ModelNotFoundError, ServingSignatureNotFoundError):
            # As the sync client: the served signature may have changed (a new version).
            self._metadata.drop(model)
            raise
        return predict_result(data)

    async def classify(
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
        """Like :meth:`ServingClient.classify`."""
        request = examples_request("Classify", model, examples, context, signature, version, label, schema)
        response = await self._call(
            "Classify", request, model=model, version=version or label, timeout=timeout
        )
        return classify_result(response.result, response.model_spec, response)

    async def regress(
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
        """Like :meth:`ServingClient.regress`."""
        request = examples_request("Regress", model, examples, context, signature, version, label, schema)
        response = await self._call(
            "Regress", request, model=model, version=version or label, timeout=timeout
        )
        return regress_result(response.result, response.model_spec, response)

    async def multi_inference(
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
        """Like :meth:`ServingClient.multi_inference`."""
        request = multi_inference_request(
            model, examples_input(examples, context, schema), tasks, version=version, label=label
        )
        response = await self._call(
            "MultiInference", request, model=model, version=version or label, timeout=timeout
        )
        return multi_inference_result(response)

    async def metadata(
        self,
        model: str,
        *,
        version: int | None = None,
        label: str | None = None,
        timeout: Any = DEFAULT,
    ) -> ModelMetadata:
        """Like :meth:`ServingClient.metadata`."""
        request = metadata_request(model, version=version, label=label)
        response = await self._call(
            "GetModelMetadata", request, model=model, version=version or label, timeout=timeout
        )
        return metadata_result(response)

    async def status(
        self, model: str, *, version: int | None = None, timeout: Any = DEFAULT
    ) -> list[VersionStatus]:
        """Like :meth:`ServingClient.status`."""
        request = status_request(model, version=version)
        response = await self._call("GetModelStatus", request, model=model, version=version, timeout=timeout)
        return status_list(response)

    async def wait_until_available(
        self,
        model: str,
        version: int | None = None,
        *,
        timeout: float = 60.0,
        poll: float = 0.1,
    ) -> VersionStatus:
        """Like :meth:`ServingClient.wait_until_available`."""
        waiter = Waiter(model, version, timeout, poll)
        while True:
            try:
                answer: list[VersionStatus] | ServingCallError = await self.status(
                    model, version=version, timeout=waiter.budget()
                )
            except WAIT_ERRORS as exc:
                answer = exc
            ready = waiter.step(answer)
            if ready is not None:
                return ready
            await asyncio.sleep(poll)

    async def reload_config(self, config: Any, *, timeout: Any = DEFAULT) -> None:
        """Like :meth:`ServingClient.reload_config`."""
        response = await self._call(
            "HandleReloadConfigRequest", reload_request(config), model=None, version=None, timeout=timeout
        )
        check_reload(response)
        self._metadata = _MetadataCache()


async def _with_retries(
    attempt: Callable[[float | None], Awaitable[T]],
    policy: RetryPolicy,
    deadline: float | None,
    rng: random.Random,
    context: Mapping[str, Any],
) -> T:
    """The async twin of ``run_with_retries`` (same policy, same deadline rules)."""
    retry = RetryState(policy, deadline, rng, context)
    while True:
        remaining = retry.next_attempt()
        try:
            with rpc_errors(**context):
                return await attempt(remaining)
        except ServingCallError as exc:
            await asyncio.sleep(retry.delay_after(exc))
