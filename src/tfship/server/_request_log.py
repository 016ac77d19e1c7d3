"""Request logging as a model config's ``logging_config`` asks: sampled ``PredictionLog`` files.

TF Serving reads ``logging_config`` per model (``log_collector_config`` with ``type`` and
``filename_prefix``, ``sampling_config`` with ``sampling_rate`` and, since 2.17,
``per_task_sampling_configs``), keeps one logger per distinct config, samples each request of
a model with every logger it has, and hands a ``PredictionLog`` (request, response and a
``LogMetadata``: model spec with the version that answered and the signature, the sampling
config, the SavedModel tags, the time) to a log collector. Open-source TF Serving registers
no collector; here the collector writes files:

- type ``""`` or ``"tfrecord"``: a TFRecord of ``PredictionLog`` (what ``tf.data.TFRecordDataset``,
  a warmup file's readers and ``tfship promote --requests`` read);
- type ``"jsonl"`` (an extension): one ``PredictionLog`` per line in protobuf's JSON mapping.

Files are named ``<prefix>-<host>-<pid>-<NNNNN>.<suffix>`` and rotate once the next record
would take one past ``max_file_bytes``. A request only samples and appends to a bounded queue;
one writer thread wakes every ``_WAKE_S`` seconds, or when the queue is half full, builds the
queued records and writes them. Each wake-up takes Python's lock from the threads answering
requests (on a busy machine the hand-over itself can stall them for a scheduler slice), so it
wakes a few times a second, not for every record. A record that finds the queue full
is dropped and counted (``:tensorflow:serving:request_log_count`` with ``RESOURCE_EXHAUSTED``):
logging never makes a request wait.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from tfship._wire import LoggingConfig, protos, write_tfrecords
from tfship.server._status import ServerConfigError

if TYPE_CHECKING:
    from google.protobuf.message import Message

logger = logging.getLogger(__name__)

#: the ``PredictionLog.log_type`` field of each logged call
PREDICT_LOG, CLASSIFY_LOG, REGRESS_LOG, MULTI_INFERENCE_LOG = 6, 2, 3, 4
#: collector types: TF Serving users write ``type: ""``; ``jsonl`` is tfship's own
COLLECTOR_TYPES = {"": "tfrecord", "tfrecord": "tfrecord", "jsonl": "jsonl"}
_SUFFIX = {"tfrecord": ".tfrecord", "jsonl": ".jsonl"}
DEFAULT_MAX_FILE_BYTES = 64 << 20
DEFAULT_QUEUE_RECORDS = 1024
# tags of the length-delimited fields a record is made of: (number << 3) | 2
_METADATA, _REQUEST, _RESPONSE = b"\x0a", b"\x0a", b"\x12"
_KINDS = {
    kind: bytes((kind << 3 | 2,)) for kind in (PREDICT_LOG, CLASSIFY_LOG, REGRESS_LOG, MULTI_INFERENCE_LOG)
}
_WAKE_S = 0.25  # how often the writer takes what is queued, unless the queue is half full first
_SAVED_MODEL_TAGS = ("serve",)


@dataclass(frozen=True)
class RequestLogOptions:
    """How one server writes every model's request log.

    Attributes:
        max_file_bytes: a file is closed and the next one opened before a record would take
            it past this size (a record larger than it gets a file of its own).
        queue_records: records waiting for the writer at most; past it a sampled request's
            record is dropped and counted, never waited for.
        dc: this server's data centre, matched against ``per_task_sampling_configs``' ``dc``.
        task_index: this server's task index, matched against their ``task_index`` (None
            matches only rules without one).

    Example:
        >>> RequestLogOptions().max_file_bytes
        67108864
    """

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    queue_records: int = DEFAULT_QUEUE_RECORDS
    dc: str = ""
    task_index: int | None = None


@dataclass(frozen=True)
class LoggingSettings:
    """One model's ``logging_config``, checked: what to write where, and how often.

    ``rules`` are the ``per_task_sampling_configs`` as ``(dc, task_index, rate)``; ``config``
    is the whole message's bytes (identical configs share one logger, as in TF Serving).
    """

    collector: str
    prefix: str
    sampling_rate: float
    rules: tuple[tuple[str, int | None, float], ...]
    sampling_config: bytes
    config: bytes

    def rate_for(self, dc: str, task_index: int | None) -> float:
        """The rate of the first rule matching this task, else ``sampling_rate``."""
        for rule_dc, rule_index, rate in self.rules:
            if (not rule_dc or rule_dc == dc) and (rule_index is None or rule_index == task_index):
                return rate
        return self.sampling_rate


def logging_settings(message: LoggingConfig, *, where: str) -> LoggingSettings:
    """Check a ``LoggingConfig`` message; ``ServerConfigError`` names what cannot be honoured.

    Example:
        >>> config = protos().model_server_config_pb2.ModelConfig().logging_config
        >>> config.log_collector_config.filename_prefix = "/var/log/requests"
        >>> config.sampling_config.sampling_rate = 0.5
        >>> logging_settings(config, where="models.config: model m").collector
        'tfrecord'
    """
    what = f"{where}: logging_config"
    if message.HasField("custom_logging_config"):
        raise ServerConfigError(
            f"{what}.custom_logging_config ({message.custom_logging_config.type_url}) is not "
            "supported; expected log_collector_config and sampling_config only"
        )
    collector = message.log_collector_config
    if collector.type not in COLLECTOR_TYPES:
        raise ServerConfigError(
            f'{what}.log_collector_config.type "{collector.type}" is not supported; expected "" '
            'or "tfrecord" (a TFRecord of PredictionLog) or "jsonl" (JSON lines)'
        )
    if not collector.filename_prefix:
        raise ServerConfigError(
            f"{what}.log_collector_config.filename_prefix is empty; expected the path the log "
            "files' names start with"
        )
    sampling = message.sampling_config
    if sampling.attributes:
        raise ServerConfigError(
            f"{what}.sampling_config.attributes {sampling.attributes} is not supported (requests "
            "carry no origin or criticality here); expected 0"
        )
    _check_rate(f"{what}.sampling_config.sampling_rate", sampling.sampling_rate)
    rules = []
    for index, rule in enumerate(sampling.per_task_sampling_configs):
        _check_rate(f"{what}.sampling_config.per_task_sampling_configs[{index}]", rule.sampling_rate)
        task = int(rule.task_index) if rule.HasField("task_index") else None
        rules.append((rule.dc, task, float(rule.sampling_rate)))
    return LoggingSettings(
        COLLECTOR_TYPES[collector.type],
        collector.filename_prefix,
        float(sampling.sampling_rate),
        tuple(rules),
        sampling.SerializeToString(deterministic=True),
        message.SerializeToString(deterministic=True),
    )


def _check_rate(what: str, rate: float) -> None:
    if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
        raise ServerConfigError(f"{what} {rate}: expected a number from 0 to 1")


class _Logger:
    """One distinct config: its sampling rate and its files (touched by the writer only)."""

    def __init__(self, settings: LoggingSettings, rate: float, options: RequestLogOptions) -> None:
        self.settings = settings
        self.rate = rate
        sampling = protos().model_server_config_pb2.SamplingConfig.FromString(settings.sampling_config)
        sampling.sampling_rate = rate  # the rate that applied, as TF Serving records it
        self.sampling_config = sampling
        self.files = _Files(settings.prefix, settings.collector, options.max_file_bytes)
        self._metadata: dict[tuple[str, str, int], bytes] = {}
        self._time = (0, b"")  # the last second seen and its field's bytes

    def metadata(self, model: str, signature: str, version: int, now: int) -> bytes:
        """The serialized ``LogMetadata`` of a record: all but the time is made once per version."""
        key = (model, signature, version)
        fixed = self._metadata.get(key)
        if fixed is None:
            metadata = protos().prediction_log_pb2.LogMetadata()
            metadata.model_spec.name = model
            if signature:
                metadata.model_spec.signature_name = signature
            metadata.model_spec.version.value = version
            metadata.sampling_config.CopyFrom(self.sampling_config)
            metadata.saved_model_tags.extend(_SAVED_MODEL_TAGS)
            fixed = self._metadata[key] = metadata.SerializeToString()
        # timestamp_secs (field 4, a varint) comes last, as a serializer writes it
        if now != self._time[0]:
            self._time = (now, b"\x20" + _varint(now) if now > 0 else b"")
        return fixed + self._time[1]


class RequestLog:
    """The server's request loggers, their bounded queue and the thread that writes.

    ``configure`` sets the loggers of every model (at start and on each config reload);
    ``log`` is called once per answered request; ``close`` writes what is queued and stops.

    Example:
        >>> request_log = RequestLog(RequestLogOptions())
        >>> request_log.configure({})
        >>> request_log.close()
    """

    def __init__(self, options: RequestLogOptions) -> None:
        self.options = options
        self._by_model: dict[str, tuple[_Logger, ...]] = {}
        self._loggers: dict[bytes, _Logger] = {}
        # appends and pops of a deque are atomic: the request path takes no lock
        self._queue: deque[Any] = deque()
        self._closing = threading.Event()
        self._wake = threading.Event()
        self._half = max(options.queue_records // 2, 1)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        self._warned_full = False

    # configuration (start and reloads) -------------------------------------------------------
    def configure(self, settings: Mapping[str, LoggingSettings]) -> None:
        """Log the models in ``settings`` from now on; ``ServerConfigError`` when a prefix
        cannot be written (nothing changes then)."""
        made: dict[bytes, _Logger] = {}
        by_model: dict[str, tuple[_Logger, ...]] = {}
        for model, setting in sorted(settings.items()):
            found = made.get(setting.config) or self._loggers.get(setting.config)
            if found is None:
                _check_prefix(setting.prefix, model)
                rate = setting.rate_for(self.options.dc, self.options.task_index)
                found = _Logger(setting, rate, self.options)
            made[setting.config] = found
            by_model[model] = (found,)
        retired = [item for key, item in self._loggers.items() if key not in made]
        with self._lock:
            self._loggers = made
            self._by_model = by_model
        if made:
            self._start_writer()
        for item in retired:  # closed by the writer after the records queued for it
            self._queue.append(("close", item))

    def _start_writer(self) -> None:
        if self._thread is None:
            self._closing.clear()
            self._wake.clear()
            self._thread = threading.Thread(target=self._write_loop, name="tfship-request-log", daemon=True)
            self._thread.start()

    # the request path ------------------------------------------------------------------------
    def log(
        self,
        kind: int,
        request: Message | Callable[[], tuple[Message, Message | bytes]],
        response: Message | bytes | None,
        model: str,
        signature: str,
        version: int,
    ) -> None:
        """Sample one answered request with each of its model's loggers and queue the records.

        ``response`` is a message or, for Predict, its serialized bytes. ``request`` may
        instead be a function that builds both (``response`` None): it is called by the
        writer, off the request path, and only for a request that was sampled. Never blocks.
        """
        loggers = self._by_model.get(model)
        if not loggers:
            return
        now = int(time.time())
        for item in loggers:
            rate = item.rate
            if rate < 1.0 and not random.random() < rate:
                continue
            if len(self._queue) >= self.options.queue_records:
                self._count(model, "RESOURCE_EXHAUSTED")
                self._warn_full()
                continue
            self._queue.append((item, kind, request, response, model, signature, version, now))
            if len(self._queue) == self._half:
                self._wake.set()

    def _count(self, model: str, code: str, count: int = 1) -> None:
        with self._lock:
            self._counts[(model, code)] = self._counts.get((model, code), 0) + count

    def _warn_full(self) -> None:
        if not self._warned_full:
            self._warned_full = True
            logger.warning(
                "request log queue full (%d records): records are dropped and counted in "
                ":tensorflow:serving:request_log_count{status_code=RESOURCE_EXHAUSTED}",
                self.options.queue_records,
            )

    def counts(self) -> dict[tuple[str, str], int]:
        """Records per (model, status): ``OK`` written, ``RESOURCE_EXHAUSTED`` dropped at a
        full queue, ``INTERNAL`` lost to a failed write."""
        with self._lock:
            return dict(self._counts)

    # the writer ------------------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            self._wake.wait(_WAKE_S)
            self._wake.clear()
            closing = self._closing.is_set()
            self._write_queued()
            if closing:
                for item in self._loggers.values():
                    item.files.close()
                return

    def _write_queued(self) -> None:
        touched: dict[int, _Logger] = {}
        for _ in range(len(self._queue)):  # what is there now: a busy server still gets flushes
            entry = self._queue.popleft()
            if entry[0] == "close":
                entry[1].files.close()
                continue
            self._write_one(entry)
            touched[id(entry[0])] = entry[0]
        self._finish(touched)

    def _write_one(self, entry: tuple[Any, ...]) -> None:
        item, kind, request, response, model, signature, version, now = entry
        try:
            if callable(request):
                request, response = request()
            record = _prediction_log(item, kind, request, response, model, signature, version, now)
            item.files.write(record)
        except Exception as exc:  # a full disk, a bad message: the writer goes on
            self._count(model, "INTERNAL")
            item.files.close()
            logger.error("request log of model %s: a record was not written: %s", model, exc)
            return
        self._count(model, "OK")

    def _finish(self, touched: Mapping[int, _Logger]) -> None:
        for item in touched.values():
            try:
                item.files.flush()
            except OSError as exc:
                item.files.close()
                logger.error("request log %s: %s", item.settings.prefix, exc)

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, close the files and stop the writer (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._closing.set()
        self._wake.set()
        thread.join(timeout)
        if thread.is_alive():
            logger.error("request log: the writer did not finish within %g s; records may be lost", timeout)


def _check_prefix(prefix: str, model: str) -> None:
    """Create the prefix's directory and write a file there, or say in one line why not."""
    directory = os.path.dirname(os.path.abspath(prefix))
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory, prefix=".tfship-request-log-"):
            pass
    except OSError as exc:
        # makedirs finding a file where the directory goes says "File exists"
        cause = "Not a directory" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)
        raise ServerConfigError(
            f"model {model}: request log filename_prefix {prefix}: cannot write files there: {cause}"
        ) from None


def _prediction_log(
    item: _Logger,
    kind: int,
    request: Message,
    response: Message | bytes,
    model: str,
    signature: str,
    version: int,
    now: int,
) -> bytes:
    """The serialized ``PredictionLog``: metadata, then the call's log of request and response."""
    metadata = item.metadata(model, signature, version, now)
    answer = response if isinstance(response, bytes) else response.SerializeToString()
    call = _field(_REQUEST, request.SerializeToString()) + _field(_RESPONSE, answer)
    record = _field(_METADATA, metadata) + _field(_KINDS[kind], call)
    if item.settings.collector == "jsonl":
        return _json_line(record)
    return record


def _field(tag: bytes, data: bytes) -> bytes:
    """A length-delimited field on the wire: its tag byte, its length, its bytes."""
    return b"".join((tag, _varint(len(data)), data))


def _varint(value: int) -> bytes:
    # the common sizes without a loop: this runs several times for every record
    if value < 0x80:
        return bytes((value,))
    if value < 0x4000:
        return bytes((value & 0x7F | 0x80, value >> 7))
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _json_line(record: bytes) -> bytes:
    from google.protobuf import json_format

    log = protos().prediction_log_pb2.PredictionLog.FromString(record)
    text = json.dumps(json_format.MessageToDict(log, preserving_proto_field_name=True), separators=(",", ":"))
    return text.encode() + b"\n"


class _Files:
    """The numbered files of one prefix: appended to, rotated by size, flushed per batch."""

    def __init__(self, prefix: str, collector: str, max_bytes: int) -> None:
        self.stem = f"{prefix}-{socket.gethostname()}-{os.getpid()}-"
        self.suffix = _SUFFIX[collector]
        self.framed = collector == "tfrecord"
        self.max_bytes = max_bytes
        self.number = 0
        self.size = 0
        self.stream: IO[bytes] | None = None

    def write(self, record: bytes) -> None:
        length = len(record) + (16 if self.framed else 0)
        if self.stream is not None and self.size and self.size + length > self.max_bytes:
            self.close()
            self.number += 1
        if self.stream is None:
            self._open(length)
        assert self.stream is not None
        if self.framed:
            write_tfrecords(self.stream, [record])
        else:
            self.stream.write(record)
        self.size += length

    def _open(self, length: int) -> None:
        """Open the first file of the sequence, from the current one, with room for ``length``.

        A restarted server with the same prefix, host and process id appends to its files:
        whole records appended to a TFRecord or JSON-lines file keep it readable.
        """
        while True:
            path = f"{self.stem}{self.number:05d}{self.suffix}"
            try:
                size = os.stat(path).st_size
            except FileNotFoundError:
                size = 0
            if size and size + length > self.max_bytes:
                self.number += 1
                continue
            self.stream = open(path, "ab")  # kept open across batches
            self.size = size
            return

    def flush(self) -> None:
        if self.stream is not None:
            self.stream.flush()

    def close(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            try:
                stream.close()
            except OSError as exc:
                logger.error("request log %s: %s", self.stem, exc)
