"""The parts of a schema: the dtypes, label kinds and uses a feature may have, the label and
one feature."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("float32", "int64", "string")
"""The dtypes a feature may have."""
LABEL_KINDS = ("binary", "multiclass", "regression")
"""The kinds of label, each with its ``tf.estimator`` Head."""
USE_KINDS = ("numeric", "bucketized", "categorical", "identity", "hash")
"""The ways a feature is shown to the model (its ``use.kind``)."""


@dataclass(frozen=True)
class Label:
    """The label: what the model predicts, and so which ``tf.estimator`` Head trains it.

    Example:
        >>> Label("species", "multiclass", ("Adelie", "Gentoo")).dtype
        'string'
    """

    name: str
    kind: str
    vocabulary: tuple[str, ...] | None = None
    #: a regression label's (mean, std) in the training data: the model learns the label
    #: standardised and answers in its own units
    scale: tuple[float, float] | None = None
    #: a regression label's smallest and largest value in the training data; written as
    #: integers (2700, not 2700.0) they say the label is a whole number
    range: tuple[float, float] | None = None

    @property
    def dtype(self) -> str:
        """The label's dtype in data: strings with a vocabulary, 0/1 ints, or floats."""
        if self.vocabulary is not None:
            return "string"
        return "int64" if self.kind != "regression" else "float32"

    @property
    def n_classes(self) -> int:
        """Number of classes (1 for regression, where the model has one output)."""
        if self.kind == "binary":
            return 2
        if self.kind == "multiclass":
            return len(self.vocabulary or ())
        return 1

    def to_dict(self) -> dict[str, Any]:
        """The label as it appears in the schema file."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.vocabulary is not None:
            out["vocabulary"] = list(self.vocabulary)
        if self.scale is not None:
            out["scale"] = {"mean": self.scale[0], "std": self.scale[1]}
        if self.range is not None:
            out["range"] = list(self.range)
        return out


@dataclass(frozen=True)
class Feature:
    """One input feature: its dtype, shape, default and how the model uses it.

    Example:
        >>> f = Feature("age", "float32", (), 30.0, {"kind": "numeric"})
        >>> f.is_sparse, f.required
        (False, False)
    """

    name: str
    dtype: str = "float32"
    shape: tuple[int, ...] | None = ()
    default: Any = None
    use: Mapping[str, Any] = field(default_factory=lambda: {"kind": "numeric"})

    @property
    def is_sparse(self) -> bool:
        """True for variable-length features (``shape: null``), parsed as SparseTensors."""
        return self.shape is None

    @property
    def required(self) -> bool:
        """True when a record must carry this feature (fixed shape and no default)."""
        return self.shape is not None and self.default is None

    @property
    def size(self) -> int | None:
        """Number of values per example, or None for variable length."""
        return None if self.shape is None else math.prod(self.shape)

    def to_dict(self) -> dict[str, Any]:
        """The feature as it appears in the schema file."""
        out: dict[str, Any] = {
            "name": self.name,
            "dtype": self.dtype,
            "shape": None if self.shape is None else list(self.shape),
        }
        if self.default is not None:
            out["default"] = self.default
        out["use"] = dict(self.use)
        return out
