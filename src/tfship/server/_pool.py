"""The threads that answer gRPC calls: as few as keep the processors busy, more only when
the ones there are stuck.

A plain thread pool with many threads wakes a sleeping thread for nearly every call once
calls overlap, and each wake is a hand-off of Python's lock between threads: for a small
model that costs more than the model. This pool keeps ``busy`` threads (one per processor)
taking calls from one queue, so under load a thread that finishes a call takes the next one
without sleeping. When calls wait and no thread has taken one for ``stuck_after`` seconds
(every thread is inside a slow model, or waiting for a batch), it adds a thread, up to
``most``; a thread added so stays while there is work and leaves after ``idle_exit`` seconds
without any.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any, TypeVar

T = TypeVar("T")


def processors() -> int:
    """Processors this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class _Call:
    __slots__ = ("future", "fn", "args", "kwargs")

    def __init__(
        self,
        future: futures.Future[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ):
        self.future, self.fn, self.args, self.kwargs = future, fn, args, kwargs

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # the caller's future carries it, as ThreadPoolExecutor's
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)


class CallPool(futures.Executor):
    """An executor for ``grpc.server``: ``busy`` threads, grown up to ``most`` when stuck.

    Example:
        >>> pool = CallPool(busy=1, most=2, name="example")
        >>> pool.submit(sum, [1, 2, 3]).result()
        6
        >>> pool.submit(int, "six").exception()
        ValueError("invalid literal for int() with base 10: 'six'")

        Behind a call that does not end, the next one gets a thread of its own:

        >>> gate = threading.Event()
        >>> stuck = pool.submit(gate.wait)
        >>> pool.submit(str.upper, "answered").result(timeout=5), pool.threads
        ('ANSWERED', 2)
        >>> gate.set()
        >>> pool.shutdown()
        >>> stuck.result()
        True
    """

    def __init__(
        self,
        busy: int,
        most: int,
        *,
        name: str = "tfship-pool",
        stuck_after: float = 0.01,
        idle_exit: float = 30.0,
    ) -> None:
        if busy < 1 or most < busy:
            raise ValueError(f"a pool needs 1 <= busy <= most, got busy={busy}, most={most}")
        self.busy, self.most, self.name = busy, most, name
        self.stuck_after, self.idle_exit = stuck_after, idle_exit
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._taken = 0  # calls taken so far: the watcher's sign of progress
        self._closed = False
        self._watcher: threading.Thread | None = None

    @property
    def threads(self) -> int:
        """Threads the pool has now."""
        return len(self._threads)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> futures.Future[T]:
        if self._closed:
            raise RuntimeError("cannot schedule a call after the pool was shut down")
        future: futures.Future[T] = futures.Future()
        self._calls.put(_Call(future, fn, args, kwargs))
        if len(self._threads) < self.busy:
            with self._lock:
                if len(self._threads) < self.busy and not self._closed:
                    self._start_thread()
                if self._watcher is None and self.most > self.busy:
                    self._watcher = threading.Thread(
                        target=self._watch, name=f"{self.name}-watch", daemon=True
                    )
                    self._watcher.start()
        return future

    def _start_thread(self) -> None:  # under self._lock
        thread = threading.Thread(target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True)
        self._threads.add(thread)
        thread.start()

    def _work(self) -> None:
        calls = self._calls
        while True:
            try:
                call = calls.get(timeout=self.idle_exit)
            except queue.Empty:
                with self._lock:  # an added thread leaves when it has had nothing to do
                    if len(self._threads) > self.busy:
                        self._threads.discard(threading.current_thread())
                        return
                continue
            if call is None:  # shut down: pass the word on to the next thread
                calls.put(None)
                return
            self._taken += 1
            call.run()
            del call  # the finished call's arguments and result go now, not at the next one

    def _watch(self) -> None:
        """Add a thread while calls wait and none has been taken for ``stuck_after`` s."""
        seen = self._taken
        while not self._closed:
            waiting = not self._calls.empty()
            # idle, look less often: a stuck pool is seen within 5 * stuck_after
            time.sleep(self.stuck_after if waiting else 5 * self.stuck_after)
            taken = self._taken
            if waiting and taken == seen and not self._calls.empty():
                with self._lock:
                    if len(self._threads) < self.most and not self._closed:
                        self._start_thread()
            seen = taken

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    call = self._calls.get_nowait()
                except queue.Empty:
                    break
                if call is not None:
                    call.future.cancel()
        self._calls.put(None)
        if wait:
            for thread in threads:
                thread.join()
