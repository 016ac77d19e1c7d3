"""Apache Beam's ``ModelHandler`` for a SavedModel run by ``LocalModel`` (``tfship[beam]``).

This module imports Apache Beam at its top: it is what a Beam pipeline imports, and
``tfship predict --runner beam`` uses it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from apache_beam.ml.inference import base

from tfship.errors import ModelInputError
from tfship.loaders._beam_rows import ERROR_KEY, NAMESPACE, count_load, run_rows

if TYPE_CHECKING:
    from tfship.loaders._model import LocalModel
    from tfship.loaders._predict import SignatureAdapter

__all__ = ["LocalModelHandler"]

_PredictionResult: Any = base.PredictionResult  # Beam's NamedTuple, untyped for mypy


class LocalModelHandler(base.ModelHandler[dict[str, Any], Any, Any]):
    """A Beam ``ModelHandler`` on ``LocalModel``: records in, output dicts out.

    Each element is a record (a dict of feature or input name -> value, converted and checked
    as ``LocalModel.predict`` does, ``ignore_unknown`` included) or a serialized ``tf.Example``.

    ``RunInference`` shares the loaded model within a worker process, so each process loads
    the export once; batches hold at most ``batch_size`` rows. A batch the model refuses is
    scored row by row, and each row it refuses comes back with its reason.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> ab = [tf.TensorSpec([None], name="a"), tf.TensorSpec([None], name="b")]
        >>> m.f = tf.function(lambda a, b: {"y": a + b}, ab, autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> import apache_beam as beam
        >>> from apache_beam.ml.inference.base import RunInference
        >>> with beam.Pipeline() as pipeline:
        ...     _ = (pipeline | beam.Create([{"a": 1.0, "b": 2.0}])
        ...          | RunInference(LocalModelHandler("m/1", None, None))
        ...          | beam.Map(lambda result: print(result.inference["y"].item())))
        3.0
    """

    def __init__(
        self,
        path: str,
        signature: str | None,
        outputs: list[str] | None,
        batch_size: int | None = None,
        *,
        ignore_unknown: bool = False,
    ) -> None:
        # Beam's batches are at most the job's batch size; RunInference shares the loaded
        # model within a worker process, so each process loads it once.
        super().__init__(max_batch_size=batch_size)
        self.path = path
        self.signature = signature
        self.outputs = outputs
        self.ignore_unknown = ignore_unknown

    def load_model(self) -> LocalModel:
        from tfship.loaders._model import load

        return load(self.path, signature=self.signature)

    def run_inference(
        self, batch: Sequence[dict[str, Any]], model: LocalModel, inference_args: Any = None
    ) -> Iterable[Any]:
        count_load(model)
        adapter = model.adapter(self.signature)
        keys = model.output_keys(adapter.sig.key, self.outputs)
        try:
            outputs = self._outputs(model, adapter, batch, keys)
        except ModelInputError:
            # One bad row fails the batch: score rows one by one and mark the culprits.
            return [self._one(model, adapter, row, keys) for row in batch]
        return [_PredictionResult(row, {k: outputs[k][i] for k in keys}) for i, row in enumerate(batch)]

    def _outputs(
        self, model: LocalModel, adapter: SignatureAdapter, rows: Sequence[Any], keys: list[str]
    ) -> dict[str, Any]:
        if all(_converted(row) for row in rows):  # rows tfship predict's pipeline typed already
            return run_rows(adapter, rows, keys)
        result: dict[str, Any] = model.predict(
            list(rows), signature=adapter.sig.key, outputs=keys, ignore_unknown=self.ignore_unknown
        )
        return result

    def _one(self, model: LocalModel, adapter: SignatureAdapter, row: dict[str, Any], keys: list[str]) -> Any:
        try:
            out = self._outputs(model, adapter, [row], keys)
        except ModelInputError as exc:
            return _PredictionResult(row, {ERROR_KEY: f"the model rejected the row: {exc}"})
        return _PredictionResult(row, {k: out[k][0] for k in keys})

    def get_metrics_namespace(self) -> str:
        return NAMESPACE


def _converted(row: Any) -> bool:
    """Whether a row comes from ``tfship predict``'s own pipeline (typed values or bytes)."""
    return (
        isinstance(row, dict)
        and bool(row)
        and set(row) <= {"values", "keep", "serialized"}
        and ("values" in row or "serialized" in row)
    )
