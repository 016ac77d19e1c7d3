"""The one place that imports TensorFlow, quietly.

TensorFlow's C++ start-up log lines are controlled by ``TF_CPP_MIN_LOG_LEVEL``, which must be
set before the first import; the Python side logs through absl and ``tf.get_logger()``.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

_verbose = False
_tensorflow: Any = None  # the module once imported and quietened; tf() is on hot paths


def set_verbose(verbose: bool) -> None:
    """Choose whether TensorFlow may log at start-up; call before the first ``tf()``."""
    global _verbose
    _verbose = verbose
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    else:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"


def is_verbose() -> bool:
    """Whether TensorFlow's logs were asked for (``tfship --verbose``)."""
    return _verbose


def tf() -> Any:
    """Import and return ``tensorflow`` with its log spam silenced unless verbose.

    Example:
        >>> tf().constant(1).dtype.name
        'int32'
    """
    global _tensorflow
    if _tensorflow is not None:
        return _tensorflow
    if not _verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow

    if not _verbose:
        tensorflow.get_logger().setLevel(logging.ERROR)
        tensorflow.autograph.set_verbosity(0)
        _quiet_absl()
    _tensorflow = tensorflow
    return tensorflow


def estimator() -> Any:
    """Import and return ``tf.estimator`` (tensorflow-estimator 2.15), quietly."""
    tf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tensorflow_estimator

    return tensorflow_estimator.estimator


def _quiet_absl() -> None:
    try:
        from absl import logging as absl_logging
    except ImportError:  # pragma: no cover - absl ships with TensorFlow
        return
    absl_logging.set_verbosity(absl_logging.ERROR)
