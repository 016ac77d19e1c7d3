"""A real headless Chromium (Debian's, installed by ``make browser``), the one way tests open a page.

:func:`chromium` runs it once on a page with command-line flags (``--dump-dom``,
``--screenshot``) and returns what it printed; :func:`console_errors` picks the lines of its log
that report a console error, an uncaught exception or a failed load. :class:`DevTools` drives
one tab through the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (the browser's fds
3 and 4, no port), for pages that must be clicked, typed into and waited on; it records every
console error, exception and failed load of the tab.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

_CONSOLE = re.compile(r"CONSOLE|Uncaught|Failed to load resource|net::ERR_")
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]


def _browser() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "Chromium is not installed (make test installs Debian's chromium)"
    return browser


def chromium(page: Path | str, *flags: str) -> subprocess.CompletedProcess[str]:
    """Chromium run once on ``page`` (a file or a URL) with ``flags``; stdout and its log."""
    target = page.as_uri() if isinstance(page, Path) else page
    return subprocess.run(
        [_browser(), *_FLAGS, "--window-size=1300,1400", *flags, target],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if _CONSOLE.search(line)]


class DevTools:
    """One headless tab driven over the DevTools protocol; use it as a context manager."""

    def __init__(self, width: int = 1300, height: int = 900) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def _fds() -> None:  # the browser reads commands on fd 3 and answers on fd 4
            reading, writing = os.dup(to_browser), os.dup(from_browser)  # either may be 3 or 4 now
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self._process = subprocess.Popen(
            [
                _browser(),
                *_FLAGS,
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_fds,
            pass_fds=(3, 4),  # kept open in the browser after _fds made them
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._call("Browser.close")
        except (OSError, AssertionError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._write)
        os.close(self._read)

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
        """A command to the tab; its result."""
        return self._call(method, params, timeout, session=True)

    def open(self, url: str, timeout: float = 60) -> None:
        """Navigate the tab to ``url`` and wait for its load event."""
        self._events.clear()
        self.call("Page.navigate", {"url": url})
        self._wait_event("Page.loadEventFired", timeout)

    def follow(self, selector: str, timeout: float = 60) -> None:
        """Click the element ``selector`` finds (a link) and wait for the page it opens to load."""
        self._events.clear()
        assert self.evaluate(f"(e => e ? (e.click(), true) : false)(document.querySelector({selector!r}))")
        self._wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expression: str, timeout: float = 60) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            timeout,
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            assert time.monotonic() < deadline, f"never true within {timeout}s: {expression}"
            self.settle(0.2)

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused element, key by key (keydown, char, keyup)."""
        for char in text:
            self.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": char, "text": char})
            self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})

    # the protocol: JSON messages ended by a NUL byte, in both directions
    def _call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60, session: bool = False
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            for reply in self._receive(deadline):
                if reply.get("id") == self._next_id:
                    assert "error" not in reply, f"{method}: {reply['error']}"
                    return dict(reply.get("result", {}))
                self._note(reply)

    def _wait_event(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == name for e in self._events):
            for message in self._receive(deadline):
                self._note(message)

    def settle(self, seconds: float) -> None:
        """Take in what the tab reports for ``seconds`` (its console errors among it)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._read], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return
            for message in self._split(os.read(self._read, 1 << 20)):
                self._note(message)

    def _receive(self, deadline: float) -> list[dict[str, Any]]:
        left = deadline - time.monotonic()
        assert left > 0, "Chromium did not answer in time"
        ready, _, _ = select.select([self._read], [], [], left)
        assert ready, "Chromium did not answer in time"
        chunk = os.read(self._read, 1 << 20)
        assert chunk, "Chromium closed its pipe"
        return self._split(chunk)

    def _split(self, chunk: bytes) -> list[dict[str, Any]]:
        self._buffer += chunk
        *whole, self._buffer = self._buffer.split(b"\0")
        return [json.loads(part) for part in whole]

    def _note(self, message: dict[str, Any]) -> None:
        self._events.append(message)
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(
                f"exception: {details.get('exception', {}).get('description', details['text'])}"
            )
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", [])]
            self.errors.append("console: " + " ".join(texts))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            self.errors.append(f"log: {entry['text']} {entry.get('url', '')}".rstrip())
