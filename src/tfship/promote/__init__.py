"""``tfship promote``: the gate between a fresh export and the directory TF Serving watches.

``promote`` checks a candidate against the version served now (ready, compatible, serves,
same answers, as good, as fast), each model served by ``tfship serve`` in a process of its
own, and publishes it as the next version only when every check passes, so TF Serving never
sees half of it. ``rollback`` republishes the previous version. ``render_report`` draws a
``Decision`` as one self-contained HTML page. Importing this package does not import
TensorFlow.

Example:
    >>> import tensorflow as tf
    >>> m = tf.Module()
    >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
    >>> tf.saved_model.save(m, "m/1", signatures=m.f)
    >>> import os
    >>> from tfship.promote import PromoteOptions, promote
    >>> os.mkdir("serving")
    >>> decision = promote("m/1", "serving/m", PromoteOptions(dry_run=True))
    >>> decision.promoted, decision.verdict_line()
    (True, 'would promote (dry run): nothing was published')
"""

from __future__ import annotations

from tfship._tf import require_extra as _require_extra

_require_extra(__name__)  # it serves models: one line naming the run extra when TensorFlow is missing

from tfship.promote._checks import Check, MetricNotMeasuredError, Threshold
from tfship.promote._promote import (
    CHECKS,
    Decision,
    PromoteOptions,
    PromotionRefusedError,
    promote,
    rollback,
)
from tfship.promote._report import render_report, write_report

__all__ = [
    "CHECKS",
    "Check",
    "Decision",
    "MetricNotMeasuredError",
    "PromoteOptions",
    "PromotionRefusedError",
    "Threshold",
    "promote",
    "render_report",
    "rollback",
    "write_report",
]
