"""The TFRecord writer of ``PredictionLog`` s, one per row, as TF Serving logs requests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tfship._wire import CLASSIFY_METHOD, REGRESS_METHOD, ours, protos
from tfship.loaders._output_values import label
from tfship.loaders._publish import Writer

Array = npt.NDArray[Any]


class PredictionLogWriter(Writer):
    """A TFRecord of ``PredictionLog``, one per row, as TF Serving logs requests (and tfx-bsl).

    A classify signature fed with examples gets a ``ClassifyLog`` (request: the row's
    ``tf.train.Example``; response: one ``Classification`` of (label, score) classes), a
    regress signature a ``RegressLog``; any other signature a ``PredictLog`` whose request
    holds the row's inputs (its serialized example for a parsing signature) and whose response
    holds the row's outputs.
    """

    def __init__(self, path: Path, *, signature: str, model_name: str, method: str = "") -> None:
        super().__init__(path)
        from tfship._tf import tf

        self.tf = tf()
        self.signature = signature
        self.model_name = model_name
        self.method = method
        self.writer = self.tf.io.TFRecordWriter(str(self.tmp))

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        rows = next(iter(outputs.values())).shape[0] if outputs else 0
        examples = _only_examples(inputs)
        if examples is not None and self._classifies(outputs):
            logs = self._classify_logs(examples, outputs)
        elif examples is not None and self.method == REGRESS_METHOD and "outputs" in outputs:
            logs = self._regress_logs(examples, outputs["outputs"])
        else:
            logs = self._predict_logs(rows, outputs, inputs or {})
        for log in logs:
            with self._io_errors():
                self.writer.write(log.SerializeToString())
        self.rows += rows

    def _classifies(self, outputs: Mapping[str, Array]) -> bool:
        keys = set(outputs)
        return self.method == CLASSIFY_METHOD and bool(keys) and keys <= {"classes", "scores"}

    def _pair(self, request_cls: Any, response_cls: Any) -> tuple[Any, Any]:
        """A new request and response, both naming this model and signature."""
        request = request_cls()
        request.model_spec.name = self.model_name
        request.model_spec.signature_name = self.signature
        response = response_cls()
        response.model_spec.CopyFrom(request.model_spec)
        return request, response

    def _classify_logs(self, examples: Array, outputs: Mapping[str, Array]) -> list[Any]:
        classification_pb2 = protos().classification_pb2
        n = len(examples)
        labels = _per_row(outputs.get("classes"), n)
        scores = _per_row(outputs.get("scores"), n)
        width = next(a.shape[1] for a in (labels, scores) if a is not None)
        logs = []
        for i, data in enumerate(examples):
            request, response = self._pair(
                classification_pb2.ClassificationRequest, classification_pb2.ClassificationResponse
            )
            request.input.example_list.examples.add().ParseFromString(data)
            result = response.result.classifications.add()
            for j in range(width):
                entry = result.classes.add()
                if labels is not None:
                    entry.label = label(labels[i, j])
                if scores is not None:
                    entry.score = float(scores[i, j])
            logs.append(_prediction_log("classify_log", request, response))
        return logs

    def _regress_logs(self, examples: Array, values: Array) -> list[Any]:
        regression_pb2 = protos().regression_pb2
        flat = values.reshape(len(examples), -1)
        logs = []
        for i, data in enumerate(examples):
            request, response = self._pair(
                regression_pb2.RegressionRequest, regression_pb2.RegressionResponse
            )
            request.input.example_list.examples.add().ParseFromString(data)
            response.result.regressions.add(value=float(flat[i, 0]))
            logs.append(_prediction_log("regress_log", request, response))
        return logs

    def _predict_logs(self, rows: int, outputs: Mapping[str, Array], inputs: Mapping[str, Any]) -> list[Any]:
        predict_pb2 = protos().predict_pb2

        def make(array: Array) -> Any:  # TensorFlow's TensorProto, taken by its bytes
            return ours(self.tf.make_tensor_proto(array))

        logs = []
        for i in range(rows):
            request, response = self._pair(predict_pb2.PredictRequest, predict_pb2.PredictResponse)
            for key, column in inputs.items():
                if isinstance(column, np.ndarray):
                    request.inputs[key].CopyFrom(make(column[i : i + 1]))
            for key, array in outputs.items():
                response.outputs[key].CopyFrom(make(array[i : i + 1]))
            logs.append(_prediction_log("predict_log", request, response))
        return logs

    def finish(self) -> None:
        if self.writer is not None:
            self.writer, writer = None, self.writer
            with self._io_errors():
                writer.close()

    @contextlib.contextmanager
    def _io_errors(self) -> Iterator[None]:
        """TensorFlow's error of a write (a full disk) as the ``OSError`` it is, naming the
        file the user gave; TensorFlow names the temporary: ``<tmp>; File too large``."""
        try:
            yield
        except self.tf.errors.OpError as exc:
            cause = str(exc.message).rsplit("; ", 1)[-1]
            raise OSError(None, cause, str(self.path)) from exc


def _prediction_log(kind: str, request: Any, response: Any) -> Any:
    """A ``PredictionLog`` whose ``kind`` (``classify_log``, ...) holds request and response."""
    log = protos().prediction_log_pb2.PredictionLog()
    entry = getattr(log, kind)
    entry.request.CopyFrom(request)
    entry.response.CopyFrom(response)
    return log


def _only_examples(inputs: Mapping[str, Any] | None) -> Array | None:
    """The serialized examples when the request is exactly one string input of them."""
    if not inputs or len(inputs) != 1:
        return None
    (column,) = inputs.values()
    if isinstance(column, np.ndarray) and column.dtype == object and column.ndim == 1:
        return column if all(isinstance(v, bytes) for v in column[:4]) else None
    return None


def _per_row(array: Array | None, rows: int) -> Array | None:
    return None if array is None else array.reshape(rows, -1)
