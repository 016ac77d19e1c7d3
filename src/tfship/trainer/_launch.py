"""A whole TF_CONFIG cluster on this machine: one process per task, on free 127.0.0.1 ports.

Every task runs the same ``tfship train`` command line with its own ``TF_CONFIG``; their logs are
shown prefixed by task (``[worker 1] step 200 ...``). When a task fails, every other task is
stopped and the error names the task and its last error line; an interrupt stops every task.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from tfship.trainer._cluster import PORT_TAKEN, ClusterError, make_tf_config

if TYPE_CHECKING:
    from tfship.trainer._train import TrainResult

PARENT_PIPE_ENV = "TFSHIP_PARENT_PIPE"
_STOP_WAIT_SECS = 5.0


@dataclass(frozen=True)
class LocalCluster:
    """How many tasks of each kind: a chief always, plus ``workers``, ``ps`` and an evaluator.

    Example:
        >>> LocalCluster.parse("workers=2,ps=1,evaluator=1")
        LocalCluster(workers=2, ps=1, evaluator=1)
    """

    workers: int = 0
    ps: int = 1
    evaluator: int = 0

    def __post_init__(self) -> None:
        if self.workers < 0 or self.ps < 1 or self.evaluator not in (0, 1):
            raise ValueError(
                f"a local cluster needs workers >= 0, ps >= 1 and evaluator 0 or 1; found "
                f"workers={self.workers}, ps={self.ps}, evaluator={self.evaluator}"
            )

    @classmethod
    def parse(cls, text: str) -> LocalCluster:
        """``workers=2,ps=1[,evaluator=1]``; a missing count keeps its default.

        Raises:
            ValueError: an unknown key, a value that is not an integer, or a count out of range.
        """
        counts: dict[str, int] = {}
        for item in (p.strip() for p in text.split(",") if p.strip()):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in ("workers", "ps", "evaluator"):
                raise ValueError(f"{item!r}: expected workers=N, ps=N or evaluator=0|1")
            try:
                counts[key] = int(value)
            except ValueError:
                raise ValueError(f"{item!r}: {value!r} is not an integer") from None
        return cls(**counts)

    def tasks(self) -> list[tuple[str, int]]:
        """Every task as ``(type, index)``: ps first (the others wait for them), evaluator last."""
        return [
            *(("ps", i) for i in range(self.ps)),
            ("chief", 0),
            *(("worker", i) for i in range(self.workers)),
            *(("evaluator", 0) for _ in range(self.evaluator)),
        ]

    def tf_configs(self, ports: Sequence[int]) -> dict[str, dict[str, Any]]:
        """The ``TF_CONFIG`` of every task, by task name, on ``127.0.0.1`` and the given ports."""
        addresses = [f"127.0.0.1:{p}" for p in ports]
        cluster = {
            "chief": addresses[:1],
            "worker": addresses[1 : 1 + self.workers],
            "ps": addresses[1 + self.workers : 1 + self.workers + self.ps],
        }
        return {
            f"{kind} {index}": make_tf_config(cluster, kind, index, evaluator=bool(self.evaluator))
            for kind, index in self.tasks()
        }


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1, chosen right before the tasks start."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class _Task:
    name: str
    process: subprocess.Popen[str]
    stdout: list[str] = field(default_factory=list)
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    readers: list[threading.Thread] = field(default_factory=list)
    first_step_at: float | None = None

    def on_stderr(self, line: str, echo: Callable[[str], None]) -> None:
        self.stderr.append(line)
        if self.first_step_at is None and line.startswith("step "):
            self.first_step_at = time.monotonic()
        echo(f"[{self.name}] {line}")

    def failure(self, code: int) -> str:
        """``worker 1 failed (exit code 1): <its last error line>``, or its last line if none."""
        lines = [line.strip() for line in self.stderr if line.strip()]
        errors = [line for line in lines if line.startswith("Error:") or "Error" in line.split(":")[0]]
        if errors:
            return f"{self.name} failed ({_how(code)}): {errors[-1].removeprefix('Error: ')}"
        last = f"; its last line: {lines[-1]}" if lines else "; it wrote nothing"
        return f"{self.name} failed ({_how(code)}){last}"


@dataclass
class ClusterRun:
    """What a local cluster run left: each task's exit code and its JSON summary (if printed)."""

    seconds: float
    startup_seconds: float | None
    results: dict[str, dict[str, Any]]
    exit_codes: dict[str, int | None] = field(default_factory=dict)

    def summary(self, model_dir: str | os.PathLike[str]) -> TrainResult:
        """The run's result from its tasks' own: the chief's step and checkpoint, the
        evaluator's metrics, and the exports as they are in ``model_dir`` now."""
        from tfship.trainer._train import TrainResult, list_exports

        chief = self.results.get("chief 0", {})
        evaluator = self.results.get("evaluator 0", {})
        return TrainResult(
            model_dir=os.fspath(model_dir),
            metrics=dict(evaluator.get("metrics", {})),
            global_step=int(chief.get("global_step", 0)),
            checkpoint=chief.get("checkpoint"),
            exports=list_exports(model_dir),
            seconds=self.seconds,
            task="cluster",
            notes=list(chief.get("notes", [])),
        )


def run_local_cluster(
    cluster: LocalCluster,
    train_args: Sequence[str],
    *,
    echo: Callable[[str], None] | None = None,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> ClusterRun:
    """Run ``tfship train <train_args> --json`` once per task of ``cluster`` and wait for all.

    Args:
        cluster: how many tasks of each kind.
        train_args: the ``train`` command's arguments (without ``--local-cluster``/``--json``).
        echo: where task output lines go, prefixed ``[worker 1]``; default: stderr.
        timeout: seconds before the whole run is stopped as failed (default: none).
        env: the environment of the tasks (default: this one's).

    Raises:
        ClusterError: a task failed (the others are stopped); names it and its last error line.
    """
    echo = echo or _stderr
    started = time.monotonic()
    try:
        tasks = _run_once(cluster, train_args, echo, timeout, env, started)
    except _PortTaken as exc:
        # Free ports are picked before the tasks bind them: another program may take one first.
        echo(f"[cluster] {exc}; starting again on other ports")
        try:
            tasks = _run_once(cluster, train_args, echo, timeout, env, started)
        except _PortTaken as again:
            raise ClusterError(str(again)) from None
    return ClusterRun(
        seconds=round(time.monotonic() - started, 2),
        startup_seconds=_startup_seconds(tasks, started),
        results={t.name: _summary(t) for t in tasks},
        exit_codes={t.name: t.process.returncode for t in tasks},
    )


class _PortTaken(Exception):
    """A task could not bind its port before any training started (never leaves this module)."""


def _run_once(
    cluster: LocalCluster,
    train_args: Sequence[str],
    echo: Callable[[str], None],
    timeout: float | None,
    env: dict[str, str] | None,
    started: float,
) -> list[_Task]:
    configs = cluster.tf_configs(free_ports(1 + cluster.workers + cluster.ps))
    tasks: list[_Task] = []
    try:
        with _StopOnSignal():
            for name, tf_config in configs.items():
                tasks.append(_start(name, tf_config, train_args, echo, env))
                echo(f"[cluster] started {name} (pid {tasks[-1].process.pid}) {_address(tf_config)}")
            _wait(tasks, started, timeout)
    finally:
        _stop_all(tasks, echo)
    return tasks


def _address(tf_config: dict[str, Any]) -> str:
    task = tf_config["task"]
    if task["type"] == "evaluator":
        return "(no server)"
    return f"at {tf_config['cluster'][task['type']][task['index']]}"


_ECHO_LOCK = threading.Lock()


def _stderr(line: str) -> None:
    with _ECHO_LOCK:  # one reader thread per task stream: whole lines only
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _start(
    name: str,
    tf_config: dict[str, Any],
    train_args: Sequence[str],
    echo: Callable[[str], None],
    env: dict[str, str] | None,
) -> _Task:
    child_env = dict(os.environ if env is None else env)
    child_env.update(TF_CONFIG=json.dumps(tf_config), PYTHONUNBUFFERED="1")
    child_env[PARENT_PIPE_ENV] = "1"
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    args = [*train_args]
    if not any(a == "--worker-delay-secs" or a.startswith("--worker-delay-secs=") for a in args):
        args += ["--worker-delay-secs", "0"]
    from tfship._tf import is_verbose

    command = [sys.executable, "-m", "tfship", *(["-v"] if is_verbose() else []), "train", *args, "--json"]
    # A session of its own: a terminal's Ctrl-C reaches this process only, which stops the
    # tasks in order; the stdin pipe closes if this process dies, and the tasks end with it.
    process = subprocess.Popen(
        command,
        env=child_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        start_new_session=True,
    )
    task = _Task(name, process)
    assert process.stdout is not None and process.stderr is not None
    task.readers = [
        _reader(process.stdout, task.stdout.append),
        _reader(process.stderr, lambda line: task.on_stderr(line, echo)),
    ]
    return task


def _reader(stream: IO[str], sink: Callable[[str], Any]) -> threading.Thread:
    def pump() -> None:
        for line in stream:
            sink(line.rstrip("\n"))

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def _wait(tasks: list[_Task], started: float, timeout: float | None) -> None:
    while True:
        running = False
        for task in tasks:
            code = task.process.poll()
            if code is None:
                running = True
            elif code != 0:
                for reader in task.readers:
                    reader.join(timeout=2)
                message = task.failure(code)
                if PORT_TAKEN in message and not any(t.first_step_at for t in tasks):
                    raise _PortTaken(message)
                raise ClusterError(message)
        if not running:
            for task in tasks:
                for reader in task.readers:
                    reader.join(timeout=5)
            return
        if timeout is not None and time.monotonic() - started > timeout:
            alive = [t.name for t in tasks if t.process.poll() is None]
            raise ClusterError(
                f"the cluster did not finish within {timeout:.0f}s; still running: {', '.join(alive)}"
            )
        time.sleep(0.2)


def _how(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _stop_all(tasks: list[_Task], echo: Callable[[str], None]) -> None:
    live = [t for t in tasks if t.process.poll() is None]
    for task in live:
        _signal(task, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_WAIT_SECS
    for task in live:
        try:
            task.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(task, signal.SIGKILL)
            task.process.wait()
    for task in tasks:
        for reader in task.readers:
            reader.join(timeout=5)
        for stream in (task.process.stdin, task.process.stdout, task.process.stderr):
            if stream is not None:
                stream.close()
        if task in live:
            echo(f"[cluster] stopped {task.name}")


def _signal(task: _Task, sig: signal.Signals) -> None:
    try:
        os.killpg(task.process.pid, sig)  # the task and anything it started
    except ProcessLookupError:
        pass


def _summary(task: _Task) -> dict[str, Any]:
    # The task printed its result with --json, as the last thing on its stdout.
    for start in range(len(task.stdout) - 1, -1, -1):
        if task.stdout[start].startswith("{"):
            try:
                data = json.loads("\n".join(task.stdout[start:]))
            except ValueError:
                continue
            return data if isinstance(data, dict) else {}
    return {}


def _startup_seconds(tasks: list[_Task], started: float) -> float | None:
    # Cluster start-up: until the chief logged its first training step.
    firsts = [t.first_step_at for t in tasks if t.name == "chief 0" and t.first_step_at is not None]
    return round(firsts[0] - started, 2) if firsts else None


class _StopOnSignal:
    """While active, SIGTERM raises KeyboardInterrupt here, so the tasks are stopped in order."""

    def __enter__(self) -> _StopOnSignal:
        self._previous: signal.Handlers | int | Callable[[int, FrameType | None], object] | None = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)

    @staticmethod
    def _raise(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt


def exit_with_parent() -> None:
    """In a task started by :func:`run_local_cluster`: end when the launcher's pipe closes."""
    if os.environ.get(PARENT_PIPE_ENV) != "1":
        return

    def watch() -> None:
        # os.read, not sys.stdin: a daemon thread must hold no lock at interpreter shutdown.
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        os._exit(1)

    threading.Thread(target=watch, name="tfship-parent-watch", daemon=True).start()
