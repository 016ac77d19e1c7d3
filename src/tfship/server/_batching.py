"""Server-side batching of Predict: concurrent calls to one signature share one model run.

Like TF Serving's ``--enable_batching``: requests whose inputs agree on everything but
dimension 0 are concatenated (up to ``max_batch_size`` rows, waiting at most
``batch_timeout_s`` for companions), run once, and the outputs are split back by rows. The
first request of a batch leads it: it waits, runs the batch on its own thread and hands each
companion its slice, so no extra threads are needed. A request alone in the server does not wait
(unlike TF Serving, which always waits ``batch_timeout_micros``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


class RunsNow(Protocol):
    """What a batch needs of a loaded version (the manager's ``Servable`` is one): a run of
    feeds at once, unbatched, of one signature to its ``outputs``."""

    def run_now(self, feeds: Mapping[str, Any], signature: str, outputs: Sequence[str]) -> dict[str, Any]: ...


@dataclass
class _Task:
    feeds: Mapping[str, Any]
    rows: int
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    result: dict[str, Any] | None = None
    error: BaseException | None = None


@dataclass
class _Queue:
    tasks: list[_Task] = field(default_factory=list)
    rows: int = 0
    leader: _Task | None = None


class Batcher:
    """Merge concurrent ``run`` calls of one servable into batches.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.server._manager import Servable
        >>> batcher = Batcher(max_batch_size=32, batch_timeout_s=0.001)
        >>> servable = Servable.load("m", 1, "m/1")
        >>> batcher.run(servable, {"x": np.ones((1, 3), np.float32)}, "serving_default", ["y"])
        {'y': array([[2., 2., 2.]], dtype=float32)}
    """

    def __init__(self, max_batch_size: int, batch_timeout_s: float) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be at least 1, got {max_batch_size}")
        self.max_batch_size = max_batch_size
        self.timeout = batch_timeout_s
        self._cond = threading.Condition()
        self._queues: dict[tuple[Any, ...], _Queue] = {}
        self._inflight = 0  # requests inside run(), queued or running
        self.batches_run = 0

    def close(self) -> None:
        """Nothing to release: batches run on the callers' threads."""

    def run(
        self, servable: RunsNow, feeds: Mapping[str, Any], signature: str, outputs: Sequence[str]
    ) -> dict[str, Any]:
        """Run ``feeds`` as part of a batch; returns this request's rows of each output."""
        key = _batch_key(feeds, signature, outputs)
        rows = _rows(feeds)
        if key is None or rows is None or rows >= self.max_batch_size:
            return servable.run_now(feeds, signature, outputs)
        task = _Task(feeds, rows)
        with self._cond:
            self._inflight += 1
        try:
            return self._run_batched(servable, key, task, signature, outputs)
        finally:
            with self._cond:
                self._inflight -= 1

    def _run_batched(
        self,
        servable: RunsNow,
        key: tuple[Any, ...],
        task: _Task,
        signature: str,
        outputs: Sequence[str],
    ) -> dict[str, Any]:
        with self._cond:
            queue = self._queues.setdefault(key, _Queue())
            queue.tasks.append(task)
            queue.rows += task.rows
            if queue.leader is None:
                queue.leader, task.lead = task, True
            elif queue.rows >= self.max_batch_size:
                self._cond.notify_all()
        while not task.lead:
            task.done.wait()
            if task.result is not None or task.error is not None:
                return _outcome(task)
            task.done.clear()  # promoted to lead the next batch
        self._lead(servable, queue, signature, outputs)
        return _outcome(task)

    def _lead(self, servable: RunsNow, queue: _Queue, signature: str, outputs: Sequence[str]) -> None:
        deadline = time.monotonic() + self.timeout
        with self._cond:
            # Wait for companions only when other requests are in flight: a lone caller would
            # just pay the timeout for nothing.
            if self._inflight > len(queue.tasks):
                self._cond.wait_for(
                    lambda: queue.rows >= self.max_batch_size,
                    max(deadline - time.monotonic(), 0),
                )
            batch, taken = [], 0
            while queue.tasks and taken + queue.tasks[0].rows <= self.max_batch_size:
                task = queue.tasks.pop(0)
                batch.append(task)
                taken += task.rows
            queue.rows -= taken
            queue.leader = queue.tasks[0] if queue.tasks else None
            if queue.leader is not None:
                queue.leader.lead = True
                queue.leader.done.set()
        self._execute(servable, batch, signature, outputs)

    def _execute(self, servable: RunsNow, batch: list[_Task], signature: str, outputs: Sequence[str]) -> None:
        try:
            if len(batch) == 1:
                batch[0].result = servable.run_now(batch[0].feeds, signature, outputs)
            else:
                self._run_merged(servable, batch, signature, outputs)
            self.batches_run += 1
        except BaseException as exc:  # every waiter must learn the outcome
            for task in batch:
                if task.result is None:
                    task.error = exc
        finally:
            for task in batch:
                task.done.set()

    @staticmethod
    def _run_merged(servable: RunsNow, batch: list[_Task], signature: str, outputs: Sequence[str]) -> None:
        keys = list(batch[0].feeds)
        merged = {k: np.concatenate([np.asarray(t.feeds[k]) for t in batch]) for k in keys}
        total = sum(t.rows for t in batch)
        result = servable.run_now(merged, signature, outputs)
        if any(np.ndim(v) == 0 or np.shape(v)[0] != total for v in result.values()):
            # An output without a batch dimension cannot be split: run each request alone.
            for task in batch:
                task.result = servable.run_now(task.feeds, signature, outputs)
            return
        start = 0
        for task in batch:
            stop = start + task.rows
            task.result = {k: np.asarray(v)[start:stop] for k, v in result.items()}
            start = stop


def _outcome(task: _Task) -> dict[str, Any]:
    if task.error is not None:
        raise task.error
    assert task.result is not None
    return task.result


def _rows(feeds: Mapping[str, Any]) -> int | None:
    sizes = {np.shape(v)[0] if np.ndim(v) else None for v in feeds.values()}
    if len(sizes) != 1:
        return None
    (size,) = sizes
    return size if size else None


def _batch_key(feeds: Mapping[str, Any], signature: str, outputs: Sequence[str]) -> tuple[Any, ...] | None:
    parts: list[Any] = [signature, tuple(outputs)]
    for name in sorted(feeds):
        value = feeds[name]
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            return None
        parts.append((name, value.dtype.str, value.shape[1:]))
    return tuple(parts)
