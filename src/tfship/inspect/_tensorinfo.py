"""Typed views of a signature's tensors: shapes, ``TensorInfo``, feature specs.

The leaves of the inspector: they read single protos and import nothing else of it (a
dtype's name is ``tfship._wire.dtype_name``, as everywhere).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfship._wire import TensorInfoProto, TensorShapeProto, dtype_name
from tfship.records import Field

#: TensorFlow's most dimensions of a valid shape (``TensorShape::IsValid``).
MAX_RANK = 254
#: The most elements a valid shape has (an int64 count); past it TensorFlow refuses the shape.
MAX_ELEMENTS = 2**63 - 1
#: The most values inspect builds from a size an export declares (a constant read from the
#: graph, a feature's default, the zeros of an example request). A few bytes of a file can
#: declare billions of values, and inspect is what people run on exports they do not trust yet.
MAX_VALUES = 1 << 20


def element_count(dims: Iterable[int]) -> int:
    """The number of elements of a shape (a negative dim counts as 0), at most
    ``MAX_ELEMENTS + 1``: the product stops growing once past it, so a shape of a hundred
    thousand huge dims costs no big-number arithmetic.

    Example:
        >>> element_count([2, 3]), element_count([]), element_count([2**62] * 9 + [0])
        (6, 1, 0)
        >>> element_count([2**62] * 100_000) == MAX_ELEMENTS + 1
        True
    """
    sizes = [max(int(d), 0) for d in dims]
    if 0 in sizes:
        return 0
    count = 1
    for size in sizes:
        count *= size
        if count > MAX_ELEMENTS:
            return MAX_ELEMENTS + 1
    return count


def shape_of(shape_proto: TensorShapeProto) -> tuple[int | None, ...] | None:
    """Turn a ``TensorShapeProto`` into a tuple (``None`` for unknown dims), or ``None`` when the
    rank is unknown.

    Example:
        >>> shape_of(None) is None
        True
    """
    if shape_proto is None or shape_proto.unknown_rank:
        return None
    return tuple(None if d.size < 0 else int(d.size) for d in shape_proto.dim)


def node_name(tensor_name: str) -> str:
    """The graph node a tensor or control input names: the text before ``:`` without ``^``.

    Example:
        >>> node_name("parse:3"), node_name("^save/restore_all"), node_name("x")
        ('parse', 'save/restore_all', 'x')
    """
    return tensor_name.lstrip("^").split(":")[0]


@dataclass(frozen=True)
class TensorInfo:
    """One input or output of a signature.

    Attributes:
        key: the signature key of the tensor (``inputs``, ``scores``, ...).
        dtype: numpy-style dtype name (``float32``, ``int64``, ``string``, ...).
        shape: dims (``None`` for unknown), or ``None`` for an unknown rank.
        encoding: ``dense``, ``coo_sparse`` or ``composite``.
        name: the graph tensor name of a dense tensor (``""`` otherwise).
        components: for ``coo_sparse``, the ``indices``/``values``/``dense_shape`` tensor names;
            for ``composite``, the component tensor names keyed by position (``"0"``, ``"1"``...).
        proto: the raw ``TensorInfo`` proto.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.inspect import read_saved_model
        >>> info = read_saved_model("m/1").meta_graph().signature().inputs["x"]
        >>> info.dtype, info.shape
        ('float32', (None, 3))
    """

    key: str
    dtype: str
    shape: tuple[int | None, ...] | None
    encoding: str
    name: str
    components: dict[str, str] = field(default_factory=dict)
    proto: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_proto(cls, key: str, proto: TensorInfoProto) -> TensorInfo:
        """Build a ``TensorInfo`` from a ``tensorflow.TensorInfo`` proto."""
        encoding = proto.WhichOneof("encoding") or "name"
        components: dict[str, str] = {}
        if encoding == "coo_sparse":
            coo = proto.coo_sparse
            components = {
                "indices": coo.indices_tensor_name,
                "values": coo.values_tensor_name,
                "dense_shape": coo.dense_shape_tensor_name,
            }
        elif encoding == "composite_tensor":
            components = {str(i): c.name for i, c in enumerate(proto.composite_tensor.components)}
        return cls(
            key=key,
            dtype=dtype_name(proto.dtype),
            shape=shape_of(proto.tensor_shape),
            encoding={"name": "dense", "coo_sparse": "coo_sparse"}.get(encoding, "composite"),
            name=proto.name if encoding == "name" else "",
            components=components,
            proto=proto,
        )

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """Every graph tensor name this input or output stands for (one, or its components)."""
        return (self.name,) if self.encoding == "dense" else tuple(self.components.values())


@dataclass(frozen=True)
class FeatureSpecEntry:
    """One ``tf.Example`` feature a parsing signature expects, recovered from its parse node.

    Attributes:
        name: the feature key in ``tf.train.Example.features``.
        kind: ``fixed`` (FixedLenFeature), ``var`` (VarLenFeature) or ``ragged`` (RaggedFeature).
        dtype: ``float32``, ``int64`` or ``string``.
        shape: per-example shape for ``fixed``; ``(None,)`` for ``var`` and ``ragged``.
        default: the flattened default value of a ``fixed`` feature, or ``None`` (required).
        tensors: the parse node's output tensor names for this feature (``value`` for fixed;
            ``indices``/``values``/``dense_shape`` for var; ``values``/``row_splits`` for ragged).

    Example:
        >>> FeatureSpecEntry("age", "fixed", "float32", (1,), None, {"value": "p:3"}).required
        True
    """

    name: str
    kind: str
    dtype: str
    shape: tuple[int | None, ...]
    default: list[Any] | None
    tensors: dict[str, str]

    @property
    def required(self) -> bool:
        """Whether an example must carry this feature (a fixed feature without a default)."""
        return self.kind == "fixed" and self.default is None

    @property
    def field(self) -> Field:
        """This feature as the typed input that readers and the ``tf.train.Example`` builder
        take: dense with its shape and default when ``fixed``, any number of values otherwise.

        Example:
            >>> FeatureSpecEntry("w", "fixed", "float32", (2,), [0.0, 1.0], {}).field.default
            array([0., 1.], dtype=float32)
        """
        if self.kind != "fixed":
            return Field(self.name, self.dtype, None, True, None)
        default = None
        if self.default is not None:
            dtype = object if self.dtype == "string" else np.dtype(self.dtype)
            default = np.asarray(self.default, dtype=dtype).reshape([d or 1 for d in self.shape])
        return Field(self.name, self.dtype, tuple(self.shape), False, default)
