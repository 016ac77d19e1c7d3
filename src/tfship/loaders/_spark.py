"""``tfship predict --runner spark`` and what ``tfship.loaders.spark.predict`` runs on executors.

Executors run the local runner's own steps on each chunk of rows: ``ChunkPreparer.prepare``
(conversion, bad rows to the rejects) and ``score`` (the model, with its bad-row isolation).
The driver writes the results with the local runner's ``emit``, in input order. Each Python
worker process loads the model once (``scorer``) and keeps it for every later batch and task:
Spark reuses its Python workers (``spark.python.worker.reuse``, on by default).

Each input file is split into as many parts as the cluster has cores; a part reads the file
with tfship's readers and scores every n-th chunk, so line numbers and rejects are exactly the
local runner's. Input files and the export must be readable at the same path on every
executor (a shared file system). A task that fails (a lost worker) is run again by Spark; the
driver receives each part once, so no row is lost or written twice.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tfship._tf import install_command, is_verbose, stderr_to
from tfship.errors import InputError, TfshipError
from tfship.loaders._job import (
    BatchRunner,
    ChunkPreparer,
    JobSpec,
    JobSummary,
    Scored,
    _check_rejects,
    emit_all,
    note_blank_lines,
    score,
)
from tfship.loaders._output_view import OutputView, output_view
from tfship.loaders._publish import RejectsWriter
from tfship.loaders._writers import format_for, make_writer
from tfship.records import Chunk, Reject, read_chunks
from tfship.records._shared import expand_inputs
from tfship.schema import CsvMissing

log = logging.getLogger(__name__)

#: The master ``tfship predict --runner spark`` uses unless told: every core of this machine.
DEFAULT_MASTER = "local[*]"


# -- executors: one model per Python worker process ---------------------------------------------


class Scorer:
    """A loaded model and its signature's adapter, kept for the life of a Python worker."""

    def __init__(self, export_dir: str, signature: str | None, threads: int | None) -> None:
        from tfship.loaders._model import load

        self.model = load(export_dir, signature=signature, threads=threads)
        self.adapter = self.model.adapter(signature)


_Key = tuple[str, Optional[str], Optional[int]]
_SCORERS: dict[_Key, Scorer] = {}
_LOADS: collections.Counter[_Key] = collections.Counter()


def scorer(export_dir: str, signature: str | None, threads: int | None = None) -> Scorer:
    """The process's model for ``export_dir``, loaded on first use and kept."""
    key = (export_dir, signature, threads)
    found = _SCORERS.get(key)
    if found is None:
        found = _SCORERS[key] = Scorer(export_dir, signature, threads)
        _LOADS[key] += 1
        log.debug("spark: loaded %s in process %d", export_dir, os.getpid())
    return found


@dataclass(frozen=True)
class Plan:
    """What an executor needs to score rows: plain data, pickled to every task."""

    export_dir: str
    signature: str
    view: OutputView
    keep_columns: tuple[str, ...] = ()
    want_inputs: bool = False
    csv: CsvMissing = field(default_factory=CsvMissing)
    fill_missing_columns: bool = False
    ignore_unknown: bool = True
    batch_size: int = 1024
    chunk_rows: int = 16384
    threads: int | None = None

    def steps(self) -> tuple[ChunkPreparer, BatchRunner]:
        """The local runner's converter and model runner, on this process's model."""
        loaded = scorer(self.export_dir, self.signature, self.threads)
        preparer = ChunkPreparer(
            loaded.adapter,
            self.keep_columns,
            self.want_inputs,
            self.csv,
            fill_missing_columns=self.fill_missing_columns,
            ignore_unknown=self.ignore_unknown,
        )
        return preparer, BatchRunner(loaded.adapter, self.view.keys, self.batch_size)


@dataclass(frozen=True)
class Part:
    """Every ``parts``-th chunk of one input file, from chunk ``part`` on."""

    index: int
    path: str
    source: str
    part: int
    parts: int


def score_parts(plan: Plan, parts: Iterator[Part]) -> Iterator[tuple[str, Any, Any]]:
    """The scored chunks of some parts, keyed (file, chunk); then (pid, models loaded)."""
    preparer, runner = plan.steps()
    for part in parts:
        chunks = read_chunks(Path(part.path), plan.chunk_rows, preparer.wanted)
        for number, chunk in enumerate(chunks):
            if number % part.parts == part.part:
                chunk = _named(chunk, part.source)
                if chunk.blank_lines:  # no row: the driver says which lines it skipped
                    yield "blank", (part.index, number), (part.source, chunk.blank_lines)
                yield "chunk", (part.index, number), score(preparer.prepare(chunk), runner, plan.want_inputs)
    yield "worker", os.getpid(), _LOADS[(plan.export_dir, plan.signature, plan.threads)]


def _named(chunk: Chunk, source: str) -> Chunk:
    """The chunk as the local runner names it (the path the user gave, not the absolute one)."""
    rejects = [dataclasses.replace(r, source=source) for r in chunk.rejects]
    return dataclasses.replace(chunk, source=source, rejects=rejects)


# -- the driver --------------------------------------------------------------------------------


@dataclass
class SparkJobSummary(JobSummary):
    """A :class:`JobSummary` of a Spark run, with how often the model was loaded, and where.

    ``model_loads`` counts the models loaded by the Python worker processes that scored rows
    (``python_workers`` of them): one each, however many tasks and batches each ran.
    """

    master: str = ""
    tasks: int = 0
    model_loads: int = 0
    python_workers: int = 0

    def to_dict(self) -> dict[str, Any]:
        found = super().to_dict()
        found["spark"] = {
            "master": self.master,
            "tasks": self.tasks,
            "model_loads": self.model_loads,
            "python_workers": self.python_workers,
        }
        return found


def check_java() -> str:
    """The ``java`` Spark will start, or one line saying there is none."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH and JAVA_HOME unset"
        raise TfshipError(
            f"Spark needs Java 17 or newer and found none ({where}); install a JDK "
            "(e.g. openjdk-17-jre-headless) or set JAVA_HOME"
        )
    major = _java_major(java)
    if major is not None and major < 17:
        raise TfshipError(
            f"Spark needs Java 17 or newer; {java} is Java {major}: install a newer JDK "
            "(e.g. openjdk-17-jre-headless) and point JAVA_HOME at it"
        )
    return java


def _java_major(java: str) -> int | None:
    """The major version ``java -version`` reports (8 for "1.8.0_392"), None when unreadable."""
    import subprocess

    try:
        shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if found is None:
        return None
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first


def _pyspark() -> Any:
    try:
        import pyspark
    except ImportError as exc:
        raise InputError(f"the Spark runner needs pyspark: {install_command('spark')}") from exc
    return pyspark


_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
"""


def start_session(master: str) -> Any:
    """A ``SparkSession`` on ``master`` (an existing one is reused), its JVM quiet unless verbose.

    Raises:
        TfshipError: no Java, or Spark's JVM did not start.
    """
    return _launch(master).session()


class _Launched:
    """Spark's JVM, started by :func:`_launch`; :meth:`session` makes its ``SparkSession``."""

    def __init__(self, master: str, java: str, conf: Any, gateway: Any, private: Path | None) -> None:
        self.master = master
        self.java = java
        self.conf = conf
        self.gateway = gateway  # None: a SparkContext of this process already runs, and is reused
        self.private = private
        self.log = str(private / "spark.log") if private is not None else None

    def session(self) -> Any:
        """The ``SparkSession`` on this JVM; may run in another thread than the launch.

        Raises:
            TfshipError: Spark did not start (the message of its log's first exception).
        """
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        try:
            if self.gateway is not None:
                SparkContext(conf=self.conf, gateway=self.gateway)
            session = SparkSession.builder.config(conf=self.conf).getOrCreate()
        except Exception as exc:  # noqa: BLE001 - pyspark raises its own types for a dead JVM
            raise self.failed(exc) from exc
        if self.private is not None:
            shutil.rmtree(self.private, ignore_errors=True)
        session.sparkContext.setLogLevel("ERROR" if not is_verbose() else "INFO")
        return session

    def failed(self, exc: BaseException) -> TfshipError:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = f" (its log: {self.log})" if self.log else ""
        reason = _jvm_exception(self.log) or first
        return TfshipError(f"Spark could not start on {self.master!r} with {self.java}: {reason}{where}")


def _launch(master: str) -> _Launched:
    """Spark's JVM started from this thread, and connected to; its ``SparkContext`` not yet made.

    pyspark starts the JVM with a ``preexec_fn``, so CPython's fork first takes the locks of its
    fork handlers (logging's), then the import lock. Another thread importing at that moment
    can hold the import lock and wait for logging's (setuptools' ``distutils`` finder imports
    setuptools, which logs, while TensorFlow is imported): both wait forever. The JVM is
    therefore started in the thread that would otherwise import, before it imports; only the
    rest of the start (the ``SparkContext``, the longer part) runs beside the model's load.

    Raises:
        TfshipError: no Java, or Spark's JVM did not start.
    """
    java = check_java()
    _pyspark()
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    # Python workers run this interpreter (the one with TensorFlow), unless told otherwise.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName("tfship predict")
        .set("spark.python.worker.reuse", "true")
        .set("spark.ui.showConsoleProgress", "false")
    )
    if master.startswith("local"):
        conf.set("spark.driver.host", "127.0.0.1").set("spark.ui.enabled", "false")
    if getattr(SparkContext, "_gateway", None) is not None:  # this process's JVM is up already
        return _Launched(master, java, conf, None, None)
    # The JVM's start-up files (its log4j configuration, its log) go to a directory of this run
    # only (mode 0700): a fixed name in the shared temp directory could be another user's
    # symlink or configuration, or another run's. Removed once Spark is up; kept, and named,
    # when it failed to start.
    private = None if is_verbose() else Path(tempfile.mkdtemp(prefix="tfship-spark-"))
    if private is not None:
        config = private / "log4j2.properties"
        config.write_text(_QUIET_LOG4J)
        # The driver's JVM only: executors log to their own files on their own machines.
        conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{config}")
    launched = _Launched(master, java, conf, None, private)
    try:
        with _jvm_stderr(private):
            launched.gateway = launch_gateway(conf)  # type: ignore[no-untyped-call]
    except Exception as exc:  # noqa: BLE001 - pyspark raises its own types for a dead JVM
        raise launched.failed(exc) from exc
    return launched


@contextlib.contextmanager
def _jvm_stderr(directory: Path | None) -> Iterator[str | None]:
    """Spark's JVM, started inside, writes its start-up notices to a file in ``directory``, not
    to our stderr.

    The JVM inherits file descriptor 2 when it starts; it is pointed at a log file for that
    moment only (no ``directory``: ``--verbose`` leaves it alone). Python's own stderr is
    restored right after.
    """
    if directory is None:
        yield None
        return
    logging.getLogger("py4j").setLevel(logging.WARNING)
    path = directory / "spark.log"
    with open(path, "xb") as log_file, stderr_to(log_file.fileno()):
        yield str(path)


def _jvm_exception(log_path: str | None) -> str | None:
    """The message of the first exception the JVM wrote to its log, if any."""
    if not log_path or not os.path.exists(log_path):
        return None
    with open(log_path, encoding="utf-8", errors="replace") as log_file:
        for line in log_file:
            if line.startswith("Exception in thread") or line.startswith("Error:"):
                return line.split(": ", 1)[-1].strip()
    return None


_MASTER = re.compile(
    r"^(local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[[\d,\s]+\]|(spark|k8s|mesos)://\S+|yarn)$"
)


def check_master(master: str) -> None:
    """Refuse a master URL Spark does not know, before anything starts."""
    if not _MASTER.match(master):
        raise InputError(
            f"Spark master {master!r}: expected local, local[N], local[*], spark://HOST:PORT, "
            "yarn or k8s://URL"
        )


_PY_ERROR = re.compile(r"^((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.*)$", re.M)


def translate(exc: BaseException) -> BaseException:
    """The Python error inside a failed Spark job, as tfship's class when it is one of them."""
    import importlib

    found = _PY_ERROR.findall(str(exc))
    python = [(name, message) for name, message in found if not name.startswith(("org.", "java."))]
    if not python:
        return TfshipError(f"the Spark job failed: {str(exc).strip().splitlines()[0]}")
    name, message = python[-1]
    module, _, cls_name = name.rpartition(".")
    if module.startswith("tfship"):
        cls = getattr(importlib.import_module(module), cls_name, None)
        if isinstance(cls, type) and issubclass(cls, TfshipError):
            try:
                return cls(message)
            except TypeError:  # an error class with required context
                pass
    return TfshipError(f"the Spark job failed: {name}: {message}")


def run_spark_job(
    model_path: Path,
    spec: JobSpec,
    master: str = DEFAULT_MASTER,
    *,
    echo_reject: Callable[[Reject], None] | None = None,
) -> SparkJobSummary:
    """Run ``spec`` on Spark; the same outputs, rejects and summary as the local runner.

    The active ``SparkSession`` is used when there is one (and left running); otherwise one
    is started on ``master`` and stopped at the end.

    Raises:
        InputError: an input is missing or lacks a required column (checked while Spark
            starts, before any task); pyspark is not installed.
        TfshipError: no Java, Spark did not start, or the job failed.
        TooManyRejectsError: as the local runner.

    Example::

        run_spark_job(Path("export/dnn"), JobSpec(["eval.csv"], Path("p.csv")), "local[2]")
    """
    if spec.batch_size < 1:
        raise InputError(f"batch size must be at least 1, got {spec.batch_size}")
    check_master(master)
    _pyspark()
    check_java()
    files = expand_inputs(spec.inputs)
    fmt = format_for(spec.output, spec.fmt)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()  # a caller's session is used, and left running
    if active is not None:
        plan, names = _plan(model_path, spec, files, fmt)
        session = active
    else:
        plan, names, session = _plan_while_starting(model_path, spec, files, fmt, master)
    started = time.perf_counter()
    try:
        results, tasks = _collect(session, plan, files)
    finally:
        if active is None:
            session.stop()
    summary = SparkJobSummary(
        output=str(spec.output), files=len(files), master=str(session.sparkContext.master), tasks=tasks
    )
    summary.rejects = str(spec.rejects) if spec.rejects else None
    chunks: list[tuple[Any, Scored]] = []
    workers: dict[int, int] = {}
    blank: list[tuple[Any, tuple[str, list[int]]]] = []
    for kind, key, value in results:
        if kind == "chunk":
            chunks.append((key, value))
        elif kind == "blank":
            blank.append((key, value))
        else:
            workers[key] = max(workers.get(key, 0), value)
    chunks.sort(key=lambda item: item[0])
    for _, (source, lines) in sorted(blank, key=lambda item: item[0]):
        note_blank_lines(source, lines)
    _write(chunks, plan.view, fmt, spec, names, summary, echo_reject)
    summary.seconds = time.perf_counter() - started
    summary.python_workers, summary.model_loads = len(workers), sum(workers.values())
    log.debug("spark: %d model load(s) in %d Python worker(s)", summary.model_loads, len(workers))
    _check_rejects(spec, summary)
    return summary


def _plan_while_starting(
    model_path: Path, spec: JobSpec, files: Sequence[Path], fmt: str, master: str
) -> tuple[Plan, dict[str, str], Any]:
    """``_plan`` here while Spark starts in a thread: the two take seconds each. The JVM's
    process is started here first (see :func:`_launch`), before ``_plan`` imports TensorFlow."""
    launched = _launch(master)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tfship-spark") as pool:
        starting = pool.submit(launched.session)
        try:
            plan, names = _plan(model_path, spec, files, fmt)
        except BaseException:
            with contextlib.suppress(Exception):
                starting.result().stop()
            raise
        return plan, names, starting.result()


def _plan(model_path: Path, spec: JobSpec, files: Sequence[Path], fmt: str) -> tuple[Plan, dict[str, str]]:
    """Check the signature, outputs and columns here, before Spark starts."""
    from tfship.loaders._model import load

    with load(model_path, signature=spec.signature) as model:
        adapter = model.adapter(spec.signature)
        chosen = None if spec.outputs is None else model.output_keys(adapter.sig.key, spec.outputs)
        preparer = ChunkPreparer(
            adapter,
            spec.keep_columns,
            fmt == "tfrecord",
            spec.csv_missing,
            fill_missing_columns=spec.fill_missing_columns,
            ignore_unknown=spec.ignore_unknown,
        )
        for path in files:
            preparer.check_file(path)
        plan = Plan(
            export_dir=str(Path(model.path).resolve()),
            signature=adapter.sig.key,
            view=output_view(adapter.sig, chosen, fmt),
            keep_columns=tuple(spec.keep_columns),
            want_inputs=fmt == "tfrecord",
            csv=spec.csv_missing,
            fill_missing_columns=spec.fill_missing_columns,
            ignore_unknown=spec.ignore_unknown,
            batch_size=spec.batch_size,
            chunk_rows=max(spec.chunk_rows, spec.batch_size),
            threads=1,
        )
        names = {
            "signature": adapter.sig.key,
            "model_name": model.path.parent.name,
            "method": adapter.sig.method_name,
        }
    return plan, names


def _collect(session: Any, plan: Plan, files: Sequence[Path]) -> tuple[list[Any], int]:
    context = session.sparkContext
    count = max(1, int(context.defaultParallelism))
    parts = [
        Part(index, str(path.resolve()), str(path), part, count)
        for index, path in enumerate(files)
        for part in range(count)
    ]
    rdd = context.parallelize(parts, len(parts)).mapPartitions(functools.partial(score_parts, plan))
    try:
        results: list[Any] = rdd.collect()
    except Exception as exc:  # noqa: BLE001 - Py4J and pyspark errors carry the worker's one
        raise translate(exc) from None
    return results, len(parts)


def _write(
    chunks: list[tuple[Any, Scored]],
    view: OutputView,
    fmt: str,
    spec: JobSpec,
    names: dict[str, str],
    summary: JobSummary,
    echo_reject: Callable[[Reject], None] | None,
) -> None:
    writer = make_writer(fmt, spec.output, **names)
    rejects = RejectsWriter(spec.rejects) if spec.rejects else None
    emit_all((scored for _, scored in chunks), view, writer, rejects, summary, echo_reject)
