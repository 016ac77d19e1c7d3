"""TF_CONFIG roles: which task this process is, what it reads, whom it waits for.

A cluster is described by the ``TF_CONFIG`` environment variable, as TensorFlow's parameter
server runtime reads it::

    {"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]},
     "task": {"type": "worker", "index": 0},
     "tfship": {"evaluator": true}}

The ``chief`` trains and writes checkpoints, ``worker`` tasks train too, ``ps`` tasks hold the
variables, and the one ``evaluator`` (not listed in ``cluster``) evaluates checkpoints and
exports. The ``tfship`` key, ignored by TensorFlow, tells the chief whether an evaluator runs:
without one the chief exports ``final`` itself. Nothing here imports TensorFlow.

Tasks leave notes in ``<model_dir>/tfship-cluster/``: the chief writes ``chief.json`` once
training has ended (the ps tasks and lagging workers end on it, or on a checkpoint at
``max_steps``), workers write ``worker-<i>.json``, the evaluator ``evaluator.json``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfship._files import write_atomically
from tfship._tf import stderr_back_for_good
from tfship.errors import InputError, TrainError

logger = logging.getLogger("tfship.trainer")

TASK_TYPES = ("chief", "worker", "ps", "evaluator")
PORT_TAKEN = "could not start its gRPC server"
NOTES_DIR = "tfship-cluster"
_TRAINING_JOBS = ("chief", "worker", "ps")


class ClusterConfigError(InputError):
    """Raised when TF_CONFIG is invalid or describes a setup TensorFlow 2.15 refuses."""


class ClusterError(TrainError):
    """Raised when a cluster task fails, or a peer it needs never answers."""


@dataclass(frozen=True)
class ClusterTask:
    """This process's place in a cluster: the jobs, its own task, and whether an evaluator runs.

    Example:
        >>> task = ClusterTask({"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]}, "worker", 1)
        >>> task.replica_index, task.num_replicas
        (2, 3)
    """

    cluster: Mapping[str, Sequence[str]]
    task_type: str
    task_index: int
    has_evaluator: bool = False

    @property
    def name(self) -> str:
        """``worker 1``: how logs and errors name this task."""
        return f"{self.task_type} {self.task_index}"

    @property
    def num_replicas(self) -> int:
        """Training replicas: the chief and every worker."""
        return len(self.cluster.get("chief", ())) + len(self.cluster.get("worker", ()))

    @property
    def replica_index(self) -> int | None:
        """The share of the training data this task reads: chief 0, worker i reads i + 1.

        (Not TensorFlow's ``global_id_in_cluster``, which counts other jobs in between.)
        """
        if self.task_type == "chief":
            return 0
        if self.task_type == "worker":
            return self.task_index + 1
        return None

    @property
    def address(self) -> str | None:
        """This task's own ``host:port``, or None for the evaluator (it starts no server)."""
        if self.task_type == "evaluator":
            return None
        return self.cluster[self.task_type][self.task_index]

    def describe(self, model_dir: str | os.PathLike[str]) -> str:
        """``chief 0 of cluster chief:1 worker:2 ps:1, model_dir m``: the line a task starts with."""
        jobs = " ".join(f"{job}:{len(self.cluster[job])}" for job in _job_order(self.cluster))
        evaluator = " (+ evaluator)" if self.has_evaluator else ""
        return f"{self.name} of cluster {jobs}{evaluator}, model_dir {os.fspath(model_dir)}"

    def peers(self) -> list[tuple[str, str]]:
        """The tasks this one cannot work without, as ``(name, host:port)``.

        The chief needs the ps tasks; a worker needs them and the chief (which initialises the
        variables); a ps task and the evaluator need the chief.
        """
        wanted = {"chief": ["ps"], "worker": ["ps", "chief"], "ps": ["chief"], "evaluator": ["chief"]}
        return [
            (f"{job} {i}", address)
            for job in wanted[self.task_type]
            for i, address in enumerate(self.cluster.get(job, ()))
        ]


def _job_order(cluster: Mapping[str, Sequence[str]]) -> list[str]:
    known = [job for job in _TRAINING_JOBS if job in cluster]
    return known + sorted(set(cluster) - set(known))


def read_tf_config(environ: Mapping[str, str] | None = None) -> ClusterTask | None:
    """The task described by ``TF_CONFIG``, or None when there is no cluster (local training).

    Raises:
        ClusterConfigError: TF_CONFIG is not valid JSON, or names a task TensorFlow 2.15
            refuses (``local``, an evaluator index above 0, an evaluator listed in ``cluster``).
    """
    text = (os.environ if environ is None else environ).get("TF_CONFIG", "")
    return parse_tf_config(text) if text.strip() else None


def parse_tf_config(text: str) -> ClusterTask | None:
    """Parse a ``TF_CONFIG`` value; see :func:`read_tf_config`."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClusterConfigError(f"TF_CONFIG is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ClusterConfigError(f"TF_CONFIG must be a JSON object, found {type(config).__name__}")
    cluster = config.get("cluster") or {}
    task = config.get("task") or {}
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ClusterConfigError('TF_CONFIG "cluster" and "task" must be JSON objects')
    task_type = task.get("type")
    if task_type == "local":
        raise ClusterConfigError(
            'TF_CONFIG task type "local" is refused by TensorFlow; leave "cluster" and "task" '
            "out to train in one process"
        )
    if not cluster:
        return None
    return _task(_jobs(cluster), task_type, task.get("index", 0), _has_evaluator(config, task_type))


def _jobs(cluster: Mapping[str, Any]) -> dict[str, list[str]]:
    if "evaluator" in cluster:
        raise ClusterConfigError(
            'TF_CONFIG lists "evaluator" in "cluster": the evaluator is not part of the training '
            'cluster; give it only "task": {"type": "evaluator", "index": 0}'
        )
    if "master" in cluster:
        raise ClusterConfigError('TF_CONFIG names a "master" job; tfship trains with a "chief" job')
    jobs: dict[str, list[str]] = {}
    for job, addresses in cluster.items():
        if isinstance(addresses, dict):  # TensorFlow also accepts {index: address}
            addresses = [addresses[k] for k in sorted(addresses, key=int)]
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise ClusterConfigError(f'TF_CONFIG cluster job "{job}" must be a list of "host:port"')
        jobs[job] = addresses
    if len(jobs.get("chief", [])) != 1:
        raise ClusterConfigError('TF_CONFIG "cluster" must have exactly one "chief" task')
    return jobs


def _task(jobs: dict[str, list[str]], task_type: object, index: object, has_evaluator: bool) -> ClusterTask:
    if not isinstance(task_type, str) or task_type not in TASK_TYPES:
        raise ClusterConfigError(f"TF_CONFIG task type {task_type!r} is not one of {list(TASK_TYPES)}")
    if not isinstance(index, int) or index < 0:
        raise ClusterConfigError(f"TF_CONFIG task index must be a non-negative integer, found {index!r}")
    if task_type == "evaluator":
        if index != 0:
            raise ClusterConfigError(
                f"TF_CONFIG task evaluator {index}: TensorFlow runs one evaluator, with index 0"
            )
        return ClusterTask(jobs, task_type, index, True)
    if task_type not in jobs or index >= len(jobs[task_type]):
        size = len(jobs.get(task_type, []))
        raise ClusterConfigError(
            f"TF_CONFIG task {task_type} {index} is not in the cluster ({task_type}:{size})"
        )
    return ClusterTask(jobs, task_type, index, has_evaluator)


def _has_evaluator(config: Mapping[str, Any], task_type: object) -> bool:
    ours = config.get("tfship") or {}
    return bool(ours.get("evaluator")) if isinstance(ours, dict) else False


def make_tf_config(
    cluster: Mapping[str, Sequence[str]], task_type: str, task_index: int, *, evaluator: bool = False
) -> dict[str, Any]:
    """The ``TF_CONFIG`` value (as a dict) for one task of a cluster.

    Example:
        >>> make_tf_config({"chief": ["a:1"], "ps": ["b:1"]}, "ps", 0)["task"]
        {'type': 'ps', 'index': 0}

    Raises:
        ClusterConfigError: the task is not in the cluster or the setup is refused.
    """
    config: dict[str, Any] = {
        "cluster": {job: list(addresses) for job, addresses in cluster.items() if addresses},
        "task": {"type": task_type, "index": task_index},
    }
    if evaluator:
        config["tfship"] = {"evaluator": True}
    parse_tf_config(json.dumps(config))  # the same checks as a task starting with it
    return config


# ---- sharding -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shard:
    """One training replica's share: ``index`` of ``count``.

    Example:
        >>> Shard(1, 3).plan(["a", "b", "c", "d"])
        (['b'], None)
        >>> Shard(1, 3).plan(["a"])
        (['a'], (3, 1))
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard index {self.index} is not in [0, {self.count})")

    def plan(self, files: Sequence[str]) -> tuple[list[str], tuple[int, int] | None]:
        """The files this replica reads, and ``(count, index)`` when it must split records too.

        Whole files when there are at least as many files as replicas (file i goes to replica
        i mod count); otherwise every replica reads every file and keeps every count-th record.
        """
        if len(files) >= self.count:
            return list(files[self.index :: self.count]), None
        return list(files), (self.count, self.index)


# ---- notes between tasks ------------------------------------------------------------------------


def notes_dir(model_dir: str | os.PathLike[str]) -> Path:
    """Where tasks of a cluster leave their notes for each other."""
    return Path(model_dir) / NOTES_DIR


def write_note(model_dir: str | os.PathLike[str], name: str, payload: Mapping[str, Any]) -> None:
    """Write one task's note atomically (``chief.json``, ``worker-0.json``, ``evaluator.json``)."""
    folder = notes_dir(model_dir)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / name, json.dumps(dict(payload), indent=2) + "\n")


def read_note(model_dir: str | os.PathLike[str], name: str) -> dict[str, Any] | None:
    """A note, or None when it is absent or half-written by a foreign tool."""
    path = notes_dir(model_dir) / name
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def training_finished(model_dir: str | os.PathLike[str], max_steps: int) -> dict[str, Any] | None:
    """Whether training has reached ``max_steps``: the chief's note, or else its newest checkpoint.

    Returns the note (``{"global_step": N, ...}``; ``"from": "checkpoint"`` when only the
    checkpoint says so), or None while training goes on. A note or checkpoint of an earlier,
    shorter run does not count.
    """
    note = read_note(model_dir, "chief.json")
    if note is not None and int(note.get("global_step", -1)) >= max_steps:
        return note
    step = latest_checkpoint_step(model_dir)
    if step is not None and step >= max_steps:
        return {"global_step": step, "max_steps": max_steps, "from": "checkpoint"}
    return None


def latest_checkpoint_step(model_dir: str | os.PathLike[str]) -> int | None:
    """The step of the newest checkpoint named in ``model_dir/checkpoint``, read without TensorFlow."""
    try:
        text = (Path(model_dir) / "checkpoint").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model_checkpoint_path":
            tail = value.strip().strip('"').rsplit("-", 1)[-1]
            return int(tail) if tail.isdigit() else None
    return None


# ---- waiting for peers, ending on time ----------------------------------------------------------


def server_error(task: ClusterTask, cause: str) -> str:
    """The one line for a task whose TensorFlow server failed (its port taken, most often)."""
    if "Could not start gRPC server" in cause:
        return f"{task.name}: {PORT_TAKEN} at {task.address}; is the port in use?"
    return f"{task.name}: {cause}"


def reachable(address: str, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


@dataclass
class Watchdog:
    """Ends a task whose peers never answer, and a ps or lagging worker once training is done.

    TensorFlow blocks inside its runtime (a worker waiting for the chief, a session waiting for
    a ps), so :meth:`start` watches from a daemon thread and ends the process with ``exit_fn``;
    a ps task, which tfship serves itself, calls :meth:`check_peers` and
    :meth:`wait_for_end` from its main thread instead. ``train`` runs one in every task of a
    cluster; a cluster that runs its own Estimator can use one the same way, since TensorFlow's
    own ps serves until its process is killed. Training is done once the chief's note says so,
    or once the newest checkpoint is at ``max_steps`` and the chief no longer answers.

    Args:
        task: this task.
        model_dir: the shared model directory (the chief's notes).
        max_steps: the training length every task was given.
        startup_timeout: seconds to wait for every peer to answer once; a ps also gives up
            once the chief has not answered for this long before training ended.
        grace: seconds a ps or worker lingers after the chief's note before ending.
        poll: seconds between looks at the notes and the checkpoint.
        liveness_every: seconds between a ps's checks that the chief still answers.
        exit_fn: how :meth:`start` ends the process: 0 for a worker that outlived the chief's
            training, 1 when a peer never answered.

    Example, in a ps task whose TensorFlow server is started::

        task = read_tf_config()
        Watchdog(task, "model", max_steps=1000).wait_for_end()
        # {'global_step': 1000, 'max_steps': 1000, 'from': 'checkpoint'}
    """

    task: ClusterTask
    model_dir: str
    max_steps: int
    startup_timeout: float = 300.0
    grace: float = 10.0
    poll: float = 0.5
    liveness_every: float = 5.0
    exit_fn: Callable[[int], None] = os._exit
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    def start(self) -> None:
        """Watch in a daemon thread."""
        threading.Thread(target=self._run, name="tfship-cluster-watchdog", daemon=True).start()

    def stop(self) -> None:
        """Stop watching (the task ended by itself)."""
        self._stop.set()

    def _run(self) -> None:
        try:
            self.check_peers()
        except ClusterError as exc:
            self._end(1, f"Error: {exc}")
            return
        if self.task.task_type == "worker":
            note = self.wait_for_end()
            if note is not None and not self._stop.is_set():
                write_note(
                    self.model_dir,
                    f"worker-{self.task.task_index}.json",
                    {"global_step": note["global_step"], "max_steps": self.max_steps},
                )
                self._end(
                    0,
                    f"{self.task.name}: the chief finished training at step {note['global_step']}; stopping",
                )

    def check_peers(self) -> None:
        """Wait until every peer answered once.

        Raises:
            ClusterError: a peer did not answer within ``startup_timeout``; names it.
        """
        deadline = time.monotonic() + self.startup_timeout
        pending = self.task.peers()
        while pending and not self._stop.is_set():
            pending = [p for p in pending if not reachable(p[1])]
            if not pending or training_finished(self.model_dir, self.max_steps):
                return
            if time.monotonic() >= deadline:
                name, address = pending[0]
                raise ClusterError(
                    f"{self.task.name}: {name} at {address} did not answer within "
                    f"{self.startup_timeout:g}s; is that task running?"
                )
            self._stop.wait(self.poll)

    def wait_for_end(self) -> dict[str, Any] | None:
        """Block until the chief's note says training is done, then linger up to ``grace``.

        A ps lingers until every worker left its note, serving their last steps; a worker
        lingers to give itself the chance to end by itself. Returns the chief's note (None when
        stopped first).
        """
        chief_seen = checked = time.monotonic()
        while not self._stop.is_set():
            note = self._finished()
            if note is not None:
                self._linger()
                return note
            now = time.monotonic()
            if self.task.task_type == "ps" and now - checked >= self.liveness_every:
                checked = now
                chief_seen = now if reachable(self.task.cluster["chief"][0]) else chief_seen
                self._check_chief_alive(now - chief_seen)
            self._stop.wait(self.poll)
        return None

    def _check_chief_alive(self, silent_for: float) -> None:
        # A chief that died before finishing would keep a ps (and a Kubernetes Job) forever;
        # one that restarts within the timeout finds its ps still serving.
        if silent_for > self.startup_timeout:
            raise ClusterError(
                f"{self.task.name}: chief 0 at {self.task.cluster['chief'][0]} stopped answering "
                f"{silent_for:.0f}s ago, before training reached step {self.max_steps}"
            )

    def _finished(self) -> dict[str, Any] | None:
        note = training_finished(self.model_dir, self.max_steps)
        if note is None or self.task.task_type != "ps" or note.get("from") != "checkpoint":
            return note
        # A checkpoint at max_steps but no note yet: the chief may still be closing its session
        # on this ps. Only a chief that no longer answers is done without its note.
        chief = self.task.cluster["chief"][0]
        return None if reachable(chief) else note

    def _linger(self) -> None:
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline and not self._stop.is_set():
            if self.task.task_type == "ps" and self._workers_done():
                return
            self._stop.wait(self.poll)

    def _workers_done(self) -> bool:
        count = len(self.task.cluster.get("worker", ()))
        return all(read_note(self.model_dir, f"worker-{i}.json") is not None for i in range(count))

    def _end(self, code: int, line: str) -> None:
        stderr_back_for_good()  # the main thread may be importing TensorFlow with stderr muted
        logger.info("%s", line)
        for handler in logging.getLogger().handlers:
            handler.flush()
        self.exit_fn(code)
