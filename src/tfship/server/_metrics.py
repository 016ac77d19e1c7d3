"""TF Serving's request metrics, exposed in Prometheus text on the REST port when asked.

With a monitoring config (``prometheus_config { enable: true path: "..." }``) TF Serving serves
its ``/tensorflow/serving/...`` metrics under Prometheus names, ``/`` turned into ``:``. The
ones kept here are those of every request (``servables/tensorflow/util.cc``):

- ``:tensorflow:serving:request_count{model_name, status}``: every Predict, Classify and
  Regress call, gRPC or REST, with the status code's name (``OK``, ``INVALID_ARGUMENT``, ...);
- ``:tensorflow:serving:request_latency{model_name, API, entrypoint}``: a histogram of the
  wall time of successful calls in microseconds, buckets 10 * 1.8**i (33 of them, then +Inf);
  ``entrypoint`` is ``GRPC`` or ``REST``.

The text is written by ``prometheus_client``. Its writer names a counter family ``..._total``;
to keep TF Serving's sample name the request count is exposed untyped.

Two counters are tfship's own, for faults TF Serving only logs:

- ``tfship_base_path_poll_errors_total{model_name}``: polls that could not list a model's base
  path (out of file descriptors, a failed network mount); each kept the served versions;
- ``tfship_rest_connections_refused_total``: REST connections answered 503 and closed because
  the connection limit was reached.

With request logging (a model's ``logging_config``), TF Serving's
``:tensorflow:serving:request_log_count{model_name, status_code}`` counts its records: ``OK``
written, ``RESOURCE_EXHAUSTED`` dropped because the log's queue was full, ``INTERNAL`` lost to
a failed write.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from tfship._wire import CODE_OF_HTTP

if TYPE_CHECKING:
    from prometheus_client.core import Metric

# Buckets::Exponential(10, 1.8, 33): upper bounds of all but the last (+Inf) bucket.
_BOUNDS = [10 * 1.8**i for i in range(33)]
_LABELS = ["model_name", "API", "entrypoint"]
DEFAULT_PATH = "/monitoring/prometheus/metrics"


class Metrics:
    """Request counts and latencies per model, API and status, as TF Serving keeps them.

    Example:
        >>> metrics = Metrics()
        >>> metrics.record("m", "Predict", "GRPC", "OK", 120.0)
        >>> b':tensorflow:serving:request_count{model_name="m",status="OK"} 1.0' in metrics.page()
        True
    """

    content_type = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self, path: str = DEFAULT_PATH) -> None:
        # every module the page needs, now: out of file descriptors, no module can be read
        import prometheus_client.core  # noqa: F401
        from prometheus_client import CollectorRegistry, generate_latest  # noqa: F401

        self.path = path or DEFAULT_PATH
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        self._latency: dict[tuple[str, str, str], tuple[list[int], float]] = {}
        self._poll_errors: dict[str, int] = {}
        self._refused = 0
        #: the request log's counts per (model, status code), read when the page is made
        self.request_log_counts: Callable[[], dict[tuple[str, str], int]] | None = None
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(self))  # type: ignore[arg-type]

    def record(self, model: str, api: str, entrypoint: str, code: str, micros: float) -> None:
        """Count one request; its latency is kept for successful ones only (as TF Serving)."""
        with self._lock:
            self._counts[(model, code)] = self._counts.get((model, code), 0) + 1
            if code != "OK":
                return
            buckets, total = self._latency.get((model, api, entrypoint), ([0] * 34, 0.0))
            index = bisect.bisect_right(_BOUNDS, micros)  # TF's limits are exclusive
            buckets[index] += 1
            self._latency[(model, api, entrypoint)] = (buckets, total + micros)

    def count_poll_error(self, model: str) -> None:
        """Count one poll that could not list ``model``'s base path."""
        with self._lock:
            self._poll_errors[model] = self._poll_errors.get(model, 0) + 1

    def count_refused_connection(self) -> None:
        """Count one REST connection refused at the connection limit."""
        with self._lock:
            self._refused += 1

    def faults(self) -> tuple[dict[str, int], int]:
        """Copies of the poll error counts per model and the refused connections."""
        with self._lock:
            return dict(self._poll_errors), self._refused

    def serves(self, path: str) -> bool:
        """Whether an HTTP request path is the metrics page."""
        return path.split("?", 1)[0] == self.path

    def page(self) -> bytes:
        """The metrics in Prometheus' text format."""
        from prometheus_client import generate_latest

        return generate_latest(self._registry)

    def snapshot(self) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str, str], Any]]:
        """Copies of the counts and latency histograms, taken under the lock."""
        with self._lock:
            latency = {key: (list(b), total) for key, (b, total) in self._latency.items()}
            return dict(self._counts), latency


class _Collector:
    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import HistogramMetricFamily, Metric

        counts, latency = self._metrics.snapshot()
        name = ":tensorflow:serving:request_count"
        counter = Metric(name, "The total number of requests.", "unknown")
        for (model, code), count in sorted(counts.items()):
            counter.add_sample(name, {"model_name": model, "status": code}, count)
        yield counter
        histogram = HistogramMetricFamily(
            ":tensorflow:serving:request_latency",
            "Distribution of wall time (in microseconds) for Tensorflow Serving request.",
            labels=_LABELS,
        )
        for key, (buckets, total) in sorted(latency.items()):
            cumulative, running = [], 0
            for bound, count in zip([*(f"{b:.6g}" for b in _BOUNDS), "+Inf"], buckets):
                running += count
                cumulative.append((bound, running))
            histogram.add_metric(list(key), cumulative, sum_value=total)
        yield histogram
        yield from _fault_counters(*self._metrics.faults())
        if self._metrics.request_log_counts is not None:
            yield _request_log_counter(self._metrics.request_log_counts())


def _request_log_counter(counts: dict[tuple[str, str], int]) -> Metric:
    from prometheus_client.core import Metric

    name = ":tensorflow:serving:request_log_count"
    text = (
        "The total number of requests logged from the model server sliced down by model_name and status code."
    )
    counter = Metric(name, text, "unknown")  # untyped, to keep TF Serving's sample name
    for (model, code), count in sorted(counts.items()):
        counter.add_sample(name, {"model_name": model, "status_code": code}, count)
    return counter


def _fault_counters(poll_errors: dict[str, int], refused: int) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily

    polls = CounterMetricFamily(
        "tfship_base_path_poll_errors",
        "Polls that could not list a model's base path; the served versions were kept.",
        labels=["model_name"],
    )
    for model, count in sorted(poll_errors.items()):
        polls.add_metric([model], count)
    yield polls
    yield CounterMetricFamily(
        "tfship_rest_connections_refused",
        "REST connections answered 503 and closed at the connection limit.",
        value=refused,
    )


_RUN_PATH = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/\d+|/labels/[^/:]+)?:(classify|regress|predict)", re.I
)


def handle_counted(
    handle: Callable[[str, str, bytes], tuple[int, bytes]],
    metrics: Metrics | None,
    method: str,
    path: str,
    body: bytes,
) -> tuple[int, bytes]:
    """Answer a REST request and count a Predict/Classify/Regress call as TF Serving does.

    The status label is read back from the HTTP status (400 is INVALID_ARGUMENT, 404
    NOT_FOUND, ...), the one answer the REST layer gives.
    """
    start = time.perf_counter()
    status, payload = handle(method, path, body)
    match = _RUN_PATH.fullmatch(path.split("?", 1)[0]) if metrics is not None else None
    if metrics is not None and match is not None:
        from urllib.parse import unquote

        code = "OK" if status == 200 else CODE_OF_HTTP.get(status, "UNKNOWN")
        api = match.group(2).capitalize()
        micros = (time.perf_counter() - start) * 1e6
        metrics.record(unquote(match.group(1)), api, "REST", code, micros)
    return status, payload


def read_monitoring_config(path: str | os.PathLike[str]) -> Metrics | None:
    """Read a ``MonitoringConfig`` text proto; a ``Metrics`` when Prometheus is enabled.

    Raises:
        ServerConfigError: the file cannot be read or parsed, with TF Serving's wording.
    """
    from tfship.server._config import parse_text_file, serving_message_class

    message = serving_message_class("MonitoringConfig")()
    parse_text_file(path, message)
    if not message.prometheus_config.enable:
        return None
    return Metrics(message.prometheus_config.path)
