"""Client-side micro-batching: concurrent ``predict`` calls merged into one request.

Calls that ask the same model, signature, version and outputs with inputs of the same names
are queued; the first one waits up to ``batch_timeout_s`` seconds (or until ``max_batch_size``
rows are queued), sends the rows of all of them concatenated along dimension 0, and hands
every caller its own slice of each output. Outputs must therefore be batch-major, as TF Serving's
own batching requires.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tfship.serve_client._base import PredictCall
    from tfship.serve_client._results import PredictResult

__all__ = ["AsyncMicroBatcher", "MicroBatchingOptions", "MicroBatcher"]


@dataclass(frozen=True)
class MicroBatchingOptions:
    """How ``ServingClient(batching=...)`` merges concurrent predict calls.

    The fields mean what they mean in ``tfship.server.BatchingOptions``, on the client side:
    a batch holds at most ``max_batch_size`` rows, and its first call waits at most
    ``batch_timeout_s`` seconds for companions.

    Example:
        >>> MicroBatchingOptions(max_batch_size=32, batch_timeout_s=0.005).max_batch_size
        32
    """

    max_batch_size: int = 64
    batch_timeout_s: float = 0.002

    def __post_init__(self) -> None:
        if self.max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {self.max_batch_size}")
        if self.batch_timeout_s < 0:
            raise ValueError(f"batch_timeout_s must be >= 0, got {self.batch_timeout_s}")


# A batch's key: the calls that may share a request (see ``_key``).
_Key = tuple[Any, ...]


@dataclass
class _Pending:
    inputs: Mapping[str, Any]
    rows: int
    done: threading.Event = field(default_factory=threading.Event)
    result: PredictResult | None = None
    error: BaseException | None = None


@dataclass
class _Queue:
    items: list[_Pending] = field(default_factory=list)
    rows: int = 0
    full: threading.Event = field(default_factory=threading.Event)


class MicroBatcher:
    """Merge concurrent predict calls (used by ``ServingClient``; see :class:`MicroBatchingOptions`)."""

    def __init__(self, run: Callable[[PredictCall], PredictResult], config: MicroBatchingOptions) -> None:
        self._run = run
        self._config = config
        self._lock = threading.Lock()
        self._queues: dict[_Key, _Queue] = {}

    def close(self) -> None:
        """Nothing to release: callers always flush their own batches."""

    def submit(self, call: PredictCall) -> PredictResult:
        """Queue one predict call, or run it alone when its inputs cannot be batched."""
        inputs = call.inputs
        rows = _rows(inputs)
        if rows is None or rows >= self._config.max_batch_size:
            return self._run(call)
        key = _key(call)
        pending = _Pending(inputs, rows)
        with self._lock:
            queue = self._queues.get(key)
            if queue is not None and queue.rows + rows > self._config.max_batch_size:
                queue.full.set()  # send what is queued now; this call starts the next batch
                del self._queues[key]
                queue = None
            if queue is None:
                queue = self._queues[key] = _Queue()
            queue.items.append(pending)
            queue.rows += rows
            leader = len(queue.items) == 1
            if queue.rows >= self._config.max_batch_size:
                queue.full.set()
        if leader:
            queue.full.wait(self._config.batch_timeout_s)
            with self._lock:
                if self._queues.get(key) is queue:
                    del self._queues[key]
            self._flush(call, queue.items)
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    def _flush(self, call: PredictCall, items: list[_Pending]) -> None:
        """Send the batch as one call with the leader's options (every call in it shares them)."""
        try:
            if len(items) == 1:
                items[0].result = self._run(replace(call, inputs=items[0].inputs))
            else:
                combined = self._run(replace(call, inputs=_merge([p.inputs for p in items])))
                for item, result in zip(items, _split(combined, [p.rows for p in items])):
                    item.result = result
        except BaseException as exc:  # every waiting caller gets the failure
            for item in items:
                item.error = exc
        finally:
            for item in items:
                item.done.set()


def _rows(inputs: object) -> int | None:
    """Rows (dim 0) shared by every input, or None when the call cannot be batched."""
    if not isinstance(inputs, Mapping) or not inputs:
        return None
    sizes = set()
    for value in inputs.values():
        if isinstance(value, np.ndarray):
            if value.ndim == 0:
                return None
            sizes.add(value.shape[0])
        elif isinstance(value, (list, tuple)):
            sizes.add(len(value))
        else:
            return None
    return sizes.pop() if len(sizes) == 1 else None


def _key(call: PredictCall) -> _Key:
    """What calls must share to be one request: everything but the rows of their inputs."""

    def describe(value: object) -> tuple[object, ...]:
        if isinstance(value, np.ndarray):
            return ("array", value.dtype.str, value.shape[1:])
        return ("list",)

    output_filter = call.output_filter
    return (
        call.model,
        call.signature,
        call.version,
        call.label,
        None if output_filter is None else tuple(output_filter),
        call.timeout,
        tuple(sorted((k, describe(v)) for k, v in call.inputs.items())),
    )


def _concat(parts: Sequence[Any]) -> Any:
    if all(isinstance(p, (list, tuple)) for p in parts):
        merged: list[Any] = []
        for part in parts:
            merged.extend(part)
        return merged
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def _split(combined: PredictResult, rows: Sequence[int]) -> list[PredictResult]:
    """One PredictResult per caller: its rows of every output."""
    from tfship.serve_client._errors import MalformedResponseError
    from tfship.serve_client._results import PredictResult

    total = sum(rows)
    for key, value in combined.outputs.items():
        if value.ndim == 0 or value.shape[0] != total:
            raise MalformedResponseError(
                f"output {key!r} has shape {list(value.shape)}, not {total} rows first; "
                "it cannot be split between batched calls: create the client without batching"
            )
    results = []
    start = 0
    for count in rows:
        stop = start + count
        outputs = {k: v[start:stop] for k, v in combined.outputs.items()}
        results.append(PredictResult(outputs, combined.model_spec, lambda: combined.raw))
        start = stop
    return results


def _merge(inputs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {key: _concat([one[key] for one in inputs]) for key in inputs[0]}


@dataclass
class _AsyncQueue:
    items: list[tuple[Mapping[str, Any], int, asyncio.Future[PredictResult]]] = field(default_factory=list)
    rows: int = 0
    full: asyncio.Event = field(default_factory=asyncio.Event)


class AsyncMicroBatcher:
    """The asyncio twin of :class:`MicroBatcher` (used by ``AsyncServingClient``)."""

    def __init__(
        self, run: Callable[[PredictCall], Awaitable[PredictResult]], config: MicroBatchingOptions
    ) -> None:
        self._run = run
        self._config = config
        self._queues: dict[_Key, _AsyncQueue] = {}

    async def submit(self, call: PredictCall) -> PredictResult:
        """Queue one predict call, or run it alone when its inputs cannot be batched."""
        inputs = call.inputs
        rows = _rows(inputs)
        if rows is None or rows >= self._config.max_batch_size:
            return await self._run(call)
        key = _key(call)
        queue = self._queues.get(key)
        if queue is not None and queue.rows + rows > self._config.max_batch_size:
            queue.full.set()
            del self._queues[key]
            queue = None
        leader = queue is None
        if queue is None:
            queue = self._queues[key] = _AsyncQueue()
        future: asyncio.Future[PredictResult] = asyncio.get_running_loop().create_future()
        queue.items.append((inputs, rows, future))
        queue.rows += rows
        if queue.rows >= self._config.max_batch_size:
            queue.full.set()
        if leader:
            try:
                await asyncio.wait_for(queue.full.wait(), self._config.batch_timeout_s)
            except asyncio.TimeoutError:
                pass
            if self._queues.get(key) is queue:
                del self._queues[key]
            await self._flush(call, queue)
        return await future

    async def _flush(self, call: PredictCall, queue: _AsyncQueue) -> None:
        futures = [future for _, _, future in queue.items]
        try:
            if len(queue.items) == 1:
                results = [await self._run(replace(call, inputs=queue.items[0][0]))]
            else:
                merged = _merge([inputs for inputs, _, _ in queue.items])
                combined = await self._run(replace(call, inputs=merged))
                results = _split(combined, [rows for _, rows, _ in queue.items])
        except Exception as exc:  # every waiting caller gets the failure
            for future in futures:
                if not future.done():
                    future.set_exception(exc)
            return
        for future, result in zip(futures, results):
            if not future.done():
                future.set_result(result)
