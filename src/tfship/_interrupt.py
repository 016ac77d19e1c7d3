"""Ctrl-C that always stops a command, even when a library swallowed the ``KeyboardInterrupt``.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be; code that catches it
by accident (a broad ``except`` in an import, a cleanup handler that carries on) would let a
command go on and, say, publish an export the user meant to stop. The CLI records every SIGINT
here, and each point of no return (renaming a staged export into place) runs inside
:func:`point_of_no_return`, which stops first if a Ctrl-C came, so an interrupted command ends
with nothing half-done.

The other half: once a command's work is live (a published version), a Ctrl-C can no longer
undo it, so inside :func:`finishing_once_live` it no longer fails the command; it finishes and
reports what it did.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_interrupted = threading.Event()
_late = threading.Event()  # a Ctrl-C that came after the work went live
_state = {"holding": False, "finishing": False, "live": False}


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state["live"]:
        _late.set()
        return
    _interrupted.set()
    if not _state["holding"]:
        raise KeyboardInterrupt


@contextmanager
def recording_interrupts(*, until_exit: bool = False) -> Iterator[None]:
    """While inside, SIGINT is recorded and raises ``KeyboardInterrupt`` (main thread only).

    With ``until_exit`` (the process's outermost scope), a command whose work went live keeps
    ignoring SIGINT after the scope, while the interpreter shuts down.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _interrupted.clear()
    _late.clear()
    _state.update(holding=False, finishing=False, live=False)
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        ignore = until_exit and _state["live"]
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignore else previous)


@contextmanager
def point_of_no_return() -> Iterator[None]:
    """Run the step that makes work visible (renaming a staged export into place).

    A Ctrl-C that came before (even one a library swallowed) stops here, before anything
    changes; one that comes during the step waits for its end. Inside
    :func:`finishing_once_live` the work is then live and the command finishes; elsewhere (a
    training run that goes on) the Ctrl-C is raised right after the step.
    """
    check()
    _state["holding"] = True
    try:
        yield
    finally:
        _state["holding"] = False
    if _state["finishing"]:
        _state["live"] = True
        if _interrupted.is_set():
            _interrupted.clear()
            _late.set()
        return
    check()


@contextmanager
def finishing_once_live() -> Iterator[None]:
    """Inside, a command whose point of no return has passed is no longer interruptible.

    For a command that makes one thing live (``tfship export`` publishing one version): after
    that, reporting failure would be false, so a Ctrl-C is only noted (:func:`late_interrupt`).
    """
    _state["finishing"] = True
    try:
        yield
    finally:
        _state["finishing"] = False


def interrupted() -> bool:
    """Whether a SIGINT arrived since the command started (and before its work went live)."""
    return _interrupted.is_set()


def late_interrupt() -> bool:
    """Whether a SIGINT arrived after the command's work went live (and was not obeyed)."""
    return _late.is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if the user pressed Ctrl-C, even if it was swallowed since."""
    if _interrupted.is_set():
        raise KeyboardInterrupt
