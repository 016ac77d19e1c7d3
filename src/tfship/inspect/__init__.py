"""Inspect SavedModels from their protos: signatures, feature specs, versions, diffs, readiness.

Nothing here loads or runs a model, and importing this package does not import TensorFlow.

Example:
    >>> from tfship.inspect import read_saved_model
    >>> info = read_saved_model("export/best/1700000000")  # doctest: +SKIP
    >>> info.meta_graph(("serve",)).signature().inputs  # doctest: +SKIP
    {'inputs': TensorInfo(key='inputs', dtype='string', shape=(None,), ...)}
"""

from __future__ import annotations

from tfship.inspect._reader import (
    FeatureSpecEntry,
    MetaGraphInfo,
    SavedModelInfo,
    SignatureInfo,
    TensorInfo,
    read_saved_model,
)

__all__ = [
    "FeatureSpecEntry",
    "MetaGraphInfo",
    "SavedModelInfo",
    "SignatureInfo",
    "TensorInfo",
    "read_saved_model",
]
