"""Replay ``assets.extra/tf_serving_warmup_requests`` while a version loads, as TF Serving does.

The file is a TFRecord of ``PredictionLog``s. Each supported log (predict, classify, regress,
multi_inference) is replayed against the version being loaded; a failing request, an
unsupported log type, a corrupt file or more than 1000 records fail that version's load.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import grpc

from tfship._wire import MAX_WARMUP_RECORDS, WARMUP_FILE, PredictionLog, protos
from tfship.server._status import RpcError, invalid

if TYPE_CHECKING:
    from tfship.server._core import ServingCore
    from tfship.server._manager import Servable

logger = logging.getLogger(__name__)

_REPLAYED = {
    "predict_log": "predict_on",
    "classify_log": "classify_on",
    "regress_log": "regress_on",
    "multi_inference_log": "multi_inference_on",
}


def run_warmup(core: ServingCore, servable: Servable, iterations: int = 1) -> int:
    """Replay the warmup file of ``servable`` through ``core``; returns the records replayed.

    Args:
        core: the ``ServingCore`` whose ``*_on`` methods run a request on one version.
        servable: the version being loaded.
        iterations: times each record is replayed (TF Serving's num_request_iterations).

    Raises:
        RpcError: the status TF Serving would report for that warmup failure.
    """
    path = os.path.join(servable.path, WARMUP_FILE)
    if not os.path.exists(path):
        return 0
    count = 0
    for record in _records(path):
        log = _parse(record, path)
        for _ in range(iterations):
            _replay(core, servable, log)
        count += 1
        if count > MAX_WARMUP_RECORDS:
            raise invalid(f"Number of warmup records exceeds the maximum ({MAX_WARMUP_RECORDS}) at {path}")
    logger.info(
        "Finished reading warmup data for model at %s. Number of warmup records read: %d.", path, count
    )
    return count


def _records(path: str) -> Iterator[bytes]:
    from tfship._tf import tf

    tf_ = tf()
    try:
        yield from tf_.compat.v1.io.tf_record_iterator(path)
    except tf_.errors.DataLossError as exc:
        raise RpcError(
            grpc.StatusCode.DATA_LOSS,
            f"{exc.message}. Please verify your warmup data is in TFRecord format.",
        ) from exc


def _parse(record: bytes, path: str) -> PredictionLog:
    from google.protobuf.message import DecodeError

    log = protos().prediction_log_pb2.PredictionLog()
    try:
        log.ParseFromString(record)
    except DecodeError as exc:
        shown = record.decode("utf-8", errors="replace")
        raise invalid(f"Failed to parse warmup record: {shown} from {path}") from exc
    return log


def _replay(core: ServingCore, servable: Servable, log: PredictionLog) -> None:
    kind = log.WhichOneof("log_type")
    if kind is None:
        return  # TF Serving skips records without a log
    method = _REPLAYED.get(kind)
    if method is None:
        number = log.DESCRIPTOR.fields_by_name[kind].number
        raise RpcError(grpc.StatusCode.UNIMPLEMENTED, f"Unsupported log_type for warmup: {number}")
    getattr(core, method)(servable, getattr(log, kind).request)
