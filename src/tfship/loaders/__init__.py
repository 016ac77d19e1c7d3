"""Run a SavedModel without a server: ``load`` it once, then ``predict`` records, files or streams.

Estimator (TF1 graph) exports and TF2 SavedModels load the same way. ``LocalModel.run`` is the
exact call TF Serving makes; ``LocalModel.predict`` accepts records, columns, DataFrames and
``tf.train.Example`` s, checks them against the signature and casts only when nothing is lost.
``run_job`` is ``tfship predict``: files in, predictions out, bad rows to the rejects.
Importing this package does not import TensorFlow. ``tfship.loaders.beam.LocalModelHandler`` is
Apache Beam's ``ModelHandler`` on ``LocalModel`` (it needs the ``beam`` extra);
``tfship.loaders.spark.predict`` scores a Spark DataFrame (the ``spark`` extra).

Example:
    >>> import tensorflow as tf
    >>> m = tf.Module()
    >>> ab = [tf.TensorSpec([None], name="a"), tf.TensorSpec([None], name="b")]
    >>> m.f = tf.function(lambda a, b: {"y": a + b}, ab, autograph=False)
    >>> tf.saved_model.save(m, "m/1", signatures=m.f)
    >>> from tfship.loaders import load
    >>> with load("m") as model:
    ...     model.predict([{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 4.0}])
    {'y': array([3., 7.], dtype=float32)}
"""

from __future__ import annotations

from tfship._tf import require_extra as _require_extra

_require_extra(__name__)  # one line naming the run extra, before a submodule fails to import TensorFlow

from tfship.loaders._job import JobSpec, JobSummary, TooManyRejectsError, run_job
from tfship.loaders._model import LocalModel, load

__all__ = [
    "JobSpec",
    "JobSummary",
    "LocalModel",
    "TooManyRejectsError",
    "load",
    "run_job",
]
