"""``AsyncServingClient``: the ``ServingClient`` API as coroutines, over an asyncio transport.

It runs the same flows as the sync client (``_base.py``): only the waiting differs. A
semaphore bounds the requests in flight (``max_in_flight``): thousands of ``gather``-ed calls
queue client-side instead of flooding the server.
"""

from __future__ import annotations

import asyncio
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
    Sleep,
    T,
)
from tfship.serve_client._batching import AsyncMicroBatcher, MicroBatchingOptions
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
from tfship.serve_client._transports import AsyncTransport, transport_for

if TYPE_CHECKING:
    from tfship.schema import Schema

__all__ = ["AsyncServingClient"]

# ``Self`` on Python 3.9 without typing_extensions: a subclass's ``async with`` keeps its type
_Client = TypeVar("_Client", bound="AsyncServingClient")


class AsyncServingClient(BaseClient):
    """The :class:`ServingClient` API on asyncio, with a bound on requests in flight.

    Create it inside a running event loop. ``target`` picks the transport as for the sync
    client (``host:port`` gRPC on ``grpc.aio``, ``http://`` REST on ``httpx.AsyncHTTPTransport``);
    ``transport=`` takes an ``AsyncGrpcTransport``, ``AsyncRestTransport`` or
    ``AsyncInProcessTransport``. Options are the sync client's, plus ``max_in_flight``
    (calls beyond it wait their turn client-side). With ``batching``, concurrent ``predict``
    calls are merged into fewer requests.

    Example:
        >>> async with AsyncServingClient("127.0.0.1:8500", max_in_flight=32) as client:  # doctest: +SKIP
        ...     results = await asyncio.gather(*(client.predict("m", {"x": row}) for row in rows))
    """

    transport: AsyncTransport

    def __init__(
        self,
        target: str | None = None,
        *,
        transport: AsyncTransport | None = None,
        timeout: float | None = 30.0,
        retries: int | RetryPolicy | None = DEFAULT_RETRIES,
        tls: Tls = None,
        max_message_bytes: int = 2**31 - 1,
        options: Sequence[tuple[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
        keepalive: float | None = 60.0,
        validate: bool = True,
        cast: bool = False,
        max_in_flight: int = 64,
        batching: MicroBatchingOptions | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        if transport is None:
            transport = transport_for(
                target,
                asynchronous=True,
                tls=tls,
                headers=headers,
                max_message_bytes=max_message_bytes,
                options=options,
                keepalive=keepalive,
                max_connections=max_in_flight,
            )
        elif target is not None:
            raise ValueError("give target or transport=, not both")
        super().__init__(transport, timeout=timeout, retries=retries, validate=validate, cast=cast)
        self.max_in_flight = max_in_flight
        self._slots = asyncio.Semaphore(max_in_flight)
        self._batcher = None if batching is None else AsyncMicroBatcher(self._predict_now, batching)
        self.in_flight = 0
        self.peak_in_flight = 0

    async def __aenter__(self: _Client) -> _Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the transport's connections; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        await self.transport.aclose()

    # -- running flows
    async def _run(self, flow: Flow[T]) -> T:
        """The async twin of ``run_flow``: the same flow, awaited."""
        self._check_open()
        try:
            step = next(flow)
            while True:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                try:
                    answer = await self._send(step)
                except ServingCallError as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(answer)
        except StopIteration as stop:
            result: T = stop.value
            return result

    async def _send(self, step: Send) -> Any:
        retry = self._retry_state(step)
        while True:
            remaining = retry.next_attempt()
            try:
                return await self._attempt(step, remaining)
            except ServingCallError as exc:
                await asyncio.sleep(retry.delay_after(exc))

    async def _attempt(self, step: Send, remaining: float | None) -> Any:
        async with self._slots:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                return await self.transport.send(step.call, remaining)
            finally:
                self.in_flight -= 1

    # -- the API
    @names_valid_keywords
    async def predict(
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
        """Like :meth:`ServingClient.predict` (merged with concurrent calls under ``batching``)."""
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
            return await self._batcher.submit(call)
        return await self._predict_now(call)

    async def _predict_now(self, call: PredictCall) -> PredictResult:
        return await self._run(self._predict_flow(call))

    @names_valid_keywords
    async def classify(
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
        """Like :meth:`ServingClient.classify`."""
        return await self._run(
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
    async def regress(
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
        """Like :meth:`ServingClient.regress`."""
        return await self._run(
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
    async def multi_inference(
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
        """Like :meth:`ServingClient.multi_inference`."""
        return await self._run(
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
    async def metadata(
        self,
        model: str,
        *,
        version: int | None = None,
        label: str | None = None,
        timeout: Timeout = DEFAULT,
    ) -> ModelMetadata:
        """Like :meth:`ServingClient.metadata`."""
        return await self._run(self._metadata_flow(ModelRef(model, version, label), self._deadline(timeout)))

    @names_valid_keywords
    async def status(
        self,
        model: str,
        *,
        version: int | None = None,
        labels: Sequence[str] = (),
        timeout: Timeout = DEFAULT,
    ) -> list[VersionStatus]:
        """Like :meth:`ServingClient.status`."""
        return await self._run(self._status_flow(model, version, self._deadline(timeout), labels))

    @names_valid_keywords
    async def wait_until_available(
        self,
        model: str,
        version: int | None = None,
        *,
        timeout: float = 60.0,
        poll: float = 0.1,
    ) -> VersionStatus:
        """Like :meth:`ServingClient.wait_until_available`."""
        return await self._run(self._wait_flow(model, version, timeout, poll))

    async def reload_config(self, config: ReloadConfig, *, timeout: Timeout = DEFAULT) -> None:
        """Like :meth:`ServingClient.reload_config`."""
        await self._run(self._reload_flow(config, timeout))
