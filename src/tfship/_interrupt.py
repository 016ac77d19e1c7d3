"""Ctrl-C that always stops a command, even when a library swallowed the ``KeyboardInterrupt``.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be; code that catches it
by accident (a broad ``except`` in an import, a cleanup handler that carries on) would let a
command go on and, say, publish an export the user meant to stop. The CLI records every SIGINT
here, and each point of no return (renaming a staged export into place) calls :func:`check`
first, so an interrupted command ends with nothing half-done.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_interrupted = threading.Event()


def _handler(signum: int, frame: FrameType | None) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


@contextmanager
def recording_interrupts() -> Iterator[None]:
    """While inside, SIGINT is recorded and raises ``KeyboardInterrupt`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _interrupted.clear()
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted() -> bool:
    """Whether a SIGINT arrived since the command started."""
    return _interrupted.is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if the user pressed Ctrl-C, even if it was swallowed since."""
    if _interrupted.is_set():
        raise KeyboardInterrupt
