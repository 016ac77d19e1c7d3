"""A SavedModel served by ``tfship serve`` in a process of its own, on loopback.

A model that crashes, exhausts memory or hangs while loading takes its own process down, never
the one deciding the promotion: the decision reads the process's start-up line (or its last
error line) within a deadline and kills it past that.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tfship._files import sweep_staging
from tfship.errors import TfshipError

if TYPE_CHECKING:
    from tfship.serve_client import ServingClient

_STOP_SECONDS = 10.0
#: promote's working directories in the system's temporary directory end with ``-<pid>``
WORKDIR_PREFIX = "tfship-promoting-"


@contextmanager
def work_directory() -> Iterator[Path]:
    """A private directory for one promotion, removed after it; those of promotions whose
    process is gone (killed) are removed first."""
    root = Path(tempfile.gettempdir())
    sweep_staging(root, WORKDIR_PREFIX)
    try:
        made = tempfile.TemporaryDirectory(prefix=WORKDIR_PREFIX, suffix=f"-{os.getpid()}")
    except OSError as exc:
        raise TfshipError(f"{root}: cannot make a working directory: {exc.strerror}") from None
    with made as path:
        yield Path(path)


def _dying_with_parent() -> Callable[[], None] | None:
    """What the child runs before exec: on Linux the kernel kills it when the deciding process
    dies, even by SIGKILL, so a killed promote leaves no server behind (elsewhere the child's
    own watch of its parent, in tfship.cli.promote, ends it). SIGKILL, not SIGTERM: a server
    stops on SIGTERM only once its models have loaded, seconds later, and no one is left to
    call it.

    ``prctl`` is found here, in the parent: the child between fork and exec only calls it, and
    neither imports nor opens a library, which could wait for ever on a lock another thread of
    the parent held when it forked.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig, sigkill = 1, int(signal.SIGKILL)

    def die_with_parent() -> None:
        prctl(pr_set_pdeathsig, sigkill)

    return die_with_parent


class LoadFailure(Exception):
    """The served process did not come up: the reason in one line."""


class ServedModel:
    """``tfship serve`` of one export under the model name ``name``, until ``stop``.

    The export is linked as version 1 of a private base path in ``workdir``, so the server
    loads exactly it (and replays its warmup file) whatever else sits beside it.
    """

    def __init__(self, export_dir: Path, name: str, workdir: Path) -> None:
        self.export_dir = export_dir
        self.name = name
        self.base = workdir / name
        self.base.mkdir(parents=True)
        (self.base / "1").symlink_to(export_dir.resolve(), target_is_directory=True)
        self.process: subprocess.Popen[str] | None = None
        self.address: str | None = None
        self.load_seconds: float | None = None
        self._started = 0.0
        self._lines: queue.Queue[str] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=50)

    def launch(self) -> None:
        """Start the process; ``wait_ready`` waits for it."""
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        self._started = time.perf_counter()
        # a finished export loads or it does not: no retries (TF Serving's five, a minute
        # apart, are for versions still being copied in), so a failure says why at once
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tfship.cli.promote",
                str(os.getpid()),
                "serve",
                "--model-base-path",
                str(self.base),
                "--model-name",
                self.name,
                "--port",
                "0",
                "--poll-seconds",
                "0",
                "--max-num-load-retries",
                "0",
                "--json",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
            preexec_fn=_dying_with_parent(),
        )
        self._readers = [
            threading.Thread(target=self._drain_stderr, daemon=True),
            threading.Thread(target=self._read_stdout, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        self._lines.put(self.process.stdout.readline())
        for _ in self.process.stdout:  # drained, so a chatty server never blocks on a full pipe
            pass

    def _drain_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line.rstrip("\n"))

    def wait_ready(self, max_seconds: float) -> None:
        """Wait until the server answers; raise ``LoadFailure`` with the reason otherwise."""
        assert self.process is not None
        remaining = max(0.0, max_seconds - (time.perf_counter() - self._started))
        try:
            line = self._lines.get(timeout=remaining)
        except queue.Empty:
            self.stop()
            raise LoadFailure(f"still loading after {max_seconds:g} s; stopped") from None
        if not line:
            raise LoadFailure(self._death())
        info = json.loads(line)
        self.address = str(info["grpc"])
        if self.name not in {m["name"] for m in info["models"] if m["available_versions"]}:
            self.stop()
            raise LoadFailure(f"the server started without an available version of {self.name}")
        self.load_seconds = time.perf_counter() - self._started

    def _death(self) -> str:
        assert self.process is not None
        try:
            self.process.wait(timeout=_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.stop()
        self._close_pipes()
        code = self.process.returncode
        errors = [line for line in self._stderr if line.startswith("Error:")]
        if errors:
            return errors[-1][len("Error:") :].strip()
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            hint = " (out of memory?)" if -code == signal.SIGKILL else ""
            return f"the serving process was killed by {name}{hint}"
        last = [line for line in self._stderr if line.strip()][-1:] or [f"exit code {code}"]
        return f"the serving process exited: {last[0]}"

    def client(self, timeout: float) -> ServingClient:
        """A ``ServingClient`` on this server."""
        from tfship.serve_client import ServingClient

        assert self.address is not None
        return ServingClient(self.address, timeout=timeout)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL); calling it again does nothing."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        assert self.process is not None
        for reader in self._readers:  # they end at the pipes' EOF, once the process is gone
            reader.join(timeout=_STOP_SECONDS)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
