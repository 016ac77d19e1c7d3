"""What a row of a batch job's output holds: the signature outputs fetched and the columns written.

A classifier's rows get their class and its probability, a regression's its value; asked-for
outputs are written as the signature returns them, and for CSV a per-class output is spread
over one column per class, named by class where the signature answers the class names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfship._wire import CLASSIFY_METHOD, REGRESS_METHOD
from tfship.loaders._output_values import label

if TYPE_CHECKING:
    from tfship.inspect import SignatureInfo

Array = npt.NDArray[Any]


@dataclass(frozen=True)
class OutputView:
    """The columns a batch job writes per row, from the signature outputs ``keys`` it fetches.

    ``kind`` is ``"raw"`` (the outputs as the signature returns them), ``"scores"`` (a classify
    signature's ``classes`` and ``scores``: every row holds the whole vocabulary, so the row's
    answer is the class of the highest score), ``"class_ids"`` (a ``tf.estimator`` head's
    predict outputs: ``classes``, ``class_ids``, ``probabilities``), ``"value"`` (a
    regression's one value per row) or ``"by_class"`` (CSV: raw outputs, a per-class one
    spread over columns named by class; see :func:`by_class`). Classifiers write ``class``
    and ``probability``, regressions ``prediction``, whichever signature answers.

    Example:
        >>> view = OutputView(("classes", "scores"), "scores")
        >>> view.columns({"classes": np.array([[b"a", b"b"]], dtype=object),
        ...               "scores": np.array([[0.2, 0.8]])})
        {'class': array([b'b'], dtype=object), 'probability': array([0.8])}
    """

    keys: tuple[str, ...]
    kind: str = "raw"
    #: ``"by_class"`` (CSV): the outputs written, the one whose rows name the classes (fetched,
    #: and written only when asked for), and those written as one column per class.
    written: tuple[str, ...] = ()
    vocabulary: str = ""
    per_class: tuple[str, ...] = ()

    def columns(self, outputs: Mapping[str, Array]) -> dict[str, Array]:
        """The written columns of one batch of ``outputs`` (a dict of the fetched ``keys``)."""
        if self.kind == "raw":
            return dict(outputs)
        if self.kind == "by_class":
            return self._by_class(outputs)
        if self.kind == "value":
            (key,) = self.keys
            return {"prediction": outputs[key].reshape(-1)}
        if self.kind == "scores":
            scores = outputs["scores"]
            best = scores.argmax(axis=1)
            rows = np.arange(scores.shape[0])
            return {"class": outputs["classes"][rows, best], "probability": scores[rows, best]}
        probabilities = outputs["probabilities"]
        ids = outputs["class_ids"].reshape(-1)
        rows = np.arange(probabilities.shape[0])
        return {"class": outputs["classes"].reshape(-1), "probability": probabilities[rows, ids]}

    def _by_class(self, outputs: Mapping[str, Array]) -> dict[str, Array]:
        classes = outputs[self.vocabulary]
        names = [label(v) for v in classes[0]] if len(classes) else None
        written: dict[str, Array] = {}
        for key in self.written:
            if key in self.per_class and names is not None:
                written.update((f"{key}_{name}", outputs[key][:, i]) for i, name in enumerate(names))
            else:
                written[key] = outputs[key]
        return written


def by_class(sig: SignatureInfo, keys: tuple[str, ...]) -> OutputView:
    """The outputs ``keys`` for CSV, a float output with one value per class spread over
    columns named by class (``probabilities_Adelie``) when the signature also answers the class
    names of every row (a ``tf.estimator`` head's ``all_classes``, a classify signature's
    ``classes``); by index (``probabilities_0``) otherwise, as the CSV writer names them.
    """
    found = [k for k in ("all_classes", "classes") if _width(sig, k, "string")]
    if not found:
        return OutputView(keys)
    vocabulary = found[0]
    width = _width(sig, vocabulary, "string")
    per_class = tuple(k for k in keys if _width(sig, k, "float") == width)
    if not per_class:
        return OutputView(keys)
    fetched = keys if vocabulary in keys else (*keys, vocabulary)
    return OutputView(fetched, "by_class", keys, vocabulary, per_class)


def _width(sig: SignatureInfo, key: str, dtype: str) -> int | None:
    """The known width of output ``key`` of shape [batch, width] and of ``dtype``, else None."""
    info = sig.outputs.get(key)
    if info is None or info.encoding != "dense" or info.shape is None or len(info.shape) != 2:
        return None
    if not info.dtype.startswith(dtype):
        return None
    width: int | None = info.shape[1]
    return width if width is not None and width > 1 else None


def output_view(sig: SignatureInfo, outputs: Sequence[str] | None, fmt: str) -> OutputView:
    """What a batch job writes for ``sig``: the ``outputs`` asked for, else the row's answer.

    Without ``outputs``, a classifier's rows get their predicted class and its probability and
    a regression's its value (no output that is the same on every row, such as a classify
    signature's ``classes`` or ``all_classes``); a signature of another shape gets all its
    outputs, and so does a ``tfrecord`` of ``PredictionLog`` s, which logs what TF Serving answers.
    """
    if outputs is not None or fmt == "tfrecord":
        keys = tuple(outputs) if outputs is not None else tuple(sorted(sig.outputs))
        return by_class(sig, keys) if fmt == "csv" else OutputView(keys)
    outs = sig.outputs

    def has(key: str, dtype: str, width: int | None = None) -> bool:
        info = outs.get(key)
        if info is None or info.encoding != "dense" or info.shape is None or len(info.shape) != 2:
            return False
        kind_ok = info.dtype == dtype if dtype == "string" else info.dtype.startswith(dtype)
        return kind_ok and (width is None or info.shape[1] == width)

    if sig.method_name == CLASSIFY_METHOD and has("classes", "string") and has("scores", "float"):
        width = outs["classes"].shape[1]  # type: ignore[index]
        if width is not None and outs["scores"].shape[1] == width:  # type: ignore[index]
            return OutputView(("classes", "scores"), "scores")
    if has("classes", "string", 1) and has("class_ids", "int", 1) and has("probabilities", "float"):
        return OutputView(("class_ids", "classes", "probabilities"), "class_ids")
    if sig.method_name == REGRESS_METHOD and has("outputs", "float", 1):
        return OutputView(("outputs",), "value")
    if has("predictions", "float", 1) and "probabilities" not in outs:
        return OutputView(("predictions",), "value")
    return by_class(sig, tuple(sorted(outs))) if fmt == "csv" else OutputView(tuple(sorted(outs)))
