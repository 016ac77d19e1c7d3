"""Inspect SavedModels from their protos: signatures, feature specs, versions, diffs, readiness.

Nothing here loads or runs a model, and importing this package does not import TensorFlow
(reading a SavedModel does not either: only its protocol buffer modules are imported).

Example:
    >>> import tensorflow as tf
    >>> m = tf.Module()
    >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
    >>> tf.saved_model.save(m, "m/1", signatures=m.f)
    >>> from tfship.inspect import read_saved_model
    >>> info = read_saved_model("m/1")
    >>> info.meta_graph(("serve",)).signature().inputs
    {'x': TensorInfo(key='x', dtype='float32', shape=(None, 3), ...)}
"""

from __future__ import annotations

from typing import Any

from tfship._deprecated import OldNames
from tfship.inspect._check import (
    CheckFailedError,
    CheckReport,
    Finding,
    check_saved_model,
    content_hash,
)
from tfship.inspect._describe import describe
from tfship.inspect._diff import BreakingChangeError, Change, DiffReport, diff_saved_models
from tfship.inspect._reader import MetaGraphInfo, SavedModelInfo, SignatureInfo, read_saved_model
from tfship.inspect._request import ExampleRequest, example_request, read_warmup, write_warmup
from tfship.inspect._scan import DEFAULT_DENYLIST, DenylistedOpError, scan_saved_model
from tfship.inspect._show import render_show
from tfship.inspect._tensorinfo import FeatureSpecEntry, TensorInfo
from tfship.inspect._versions import VersionInfo, VersionsReport, list_versions

__all__ = [
    "BreakingChangeError",
    "Change",
    "CheckFailedError",
    "CheckReport",
    "DEFAULT_DENYLIST",
    "DenylistedOpError",
    "DiffReport",
    "ExampleRequest",
    "FeatureSpecEntry",
    "Finding",
    "MetaGraphInfo",
    "SavedModelInfo",
    "SignatureInfo",
    "TensorInfo",
    "VersionInfo",
    "VersionsReport",
    "check_saved_model",
    "content_hash",
    "describe",
    "diff_saved_models",
    "example_request",
    "list_versions",
    "read_saved_model",
    "read_warmup",
    "render_show",
    "scan_saved_model",
    "write_warmup",
]

# Public before; now what other tfship packages import from ``tfship.inspect._shared``.
_OLD = OldNames(
    __name__,
    withdrawn={
        name: f"tfship.inspect._shared.{name}"
        for name in (
            "HOST_EFFECT_OPS",
            "REMEDY",
            "describe_newer_ops",
            "host_effects",
            "host_effects_refusal",
            "newer_op_problems",
            "unrestored_variables",
        )
    },
)


def __getattr__(name: str) -> Any:
    return _OLD.resolve(name)
