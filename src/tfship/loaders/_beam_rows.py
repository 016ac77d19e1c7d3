"""What ``tfship predict --runner beam`` and ``LocalModelHandler`` share: metric names and
how a batch of rows becomes one model run. No Beam import at the top: the runner's module
checks first that Beam is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tfship.loaders._predict import SignatureAdapter, object_array
from tfship.records._shared import Column, coo_from_lengths

if TYPE_CHECKING:
    from tfship.loaders._model import LocalModel

NAMESPACE = "tfship"
ERROR_KEY = "__tfship_error__"
_SEEN_MODELS: set[int] = set()


def counter(name: str) -> Any:
    from apache_beam.metrics.metric import Metrics

    return Metrics.counter(NAMESPACE, name)


def count_load(model: LocalModel) -> None:
    # Beam records metrics only inside a bundle, not in load_model: count each loaded model
    # object (one per worker process when RunInference shares it) on its first batch.
    if id(model) not in _SEEN_MODELS:
        _SEEN_MODELS.add(id(model))
        counter("model_loads").inc()


def run_rows(adapter: SignatureAdapter, rows: Sequence[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    if "serialized" in rows[0]:
        result: dict[str, Any] = adapter.run_examples(object_array([r["serialized"] for r in rows]), keys)
        return result
    columns: dict[str, Column] = {}
    for name, fld in adapter.fields.items():
        values = [r["values"][name] for r in rows]
        dtype = object if fld.dtype == "string" else np.dtype(fld.dtype)
        if fld.sparse:
            lengths = np.asarray([len(v) for v in values], dtype=np.int64)
            flat = np.asarray([x for v in values for x in v], dtype=dtype)
            columns[name] = coo_from_lengths(lengths, flat)
        else:
            shape = tuple(d or 1 for d in fld.shape or ())
            columns[name] = np.asarray(values, dtype=dtype).reshape((len(rows), *shape))
    out: dict[str, Any] = adapter.run_columns(columns, keys)
    return out
