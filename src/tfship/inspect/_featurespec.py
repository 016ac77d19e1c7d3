"""Recover the ``tf.Example`` feature spec of a parsing signature from its graph.

A parsing receiver feeds its one string input to a ParseExample or ParseExampleV2 node. The
feature keys and dense defaults are Const inputs of that node; dtypes and shapes are attrs.
Output tensors come in the op's order: sparse indices, sparse values, sparse shapes, dense
values, then (V2 only) ragged values and ragged row splits.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any, Protocol

from tfship._wire import (
    DT_STRING,
    MetaGraphDef,
    NodeDef,
    TensorDecodeError,
    TensorProto,
    decode_tensor,
    dtype_name,
)
from tfship.errors import ModelError
from tfship.inspect._tensorinfo import (
    MAX_RANK,
    MAX_VALUES,
    FeatureSpecEntry,
    TensorInfo,
    element_count,
    node_name,
    shape_of,
)


class _Signature(Protocol):
    @property
    def inputs(self) -> Mapping[str, TensorInfo]: ...


class _Graph(Protocol):
    """What the recovery reads of a ``MetaGraphInfo``: its proto, its nodes by name, and where
    it was read from (for messages)."""

    @property
    def proto(self) -> MetaGraphDef: ...

    @property
    def nodes(self) -> Mapping[str, NodeDef]: ...

    @property
    def path(self) -> str | None: ...

    @property
    def file(self) -> str | None: ...


_PARSE_OPS = ("ParseExample", "ParseExampleV2")
# Ops a serialized-examples tensor may pass through on its way to the parse node.
_PASS_THROUGH = ("Identity", "PlaceholderWithDefault", "Reshape", "Squeeze", "ExpandDims")
# Ops between a parse node and the constant it reads (defaults of shaped features are reshaped).
_FORWARDING = ("Identity", "Reshape")


def recover_feature_spec(signature: _Signature, meta_graph: _Graph) -> dict[str, FeatureSpecEntry] | None:
    """Return the feature spec of a signature whose one string input is parsed, else ``None``.

    Example, for an Estimator's parsing export with a float feature ``age`` of shape ``[1]``::

        spec = recover_feature_spec(sig, mg)
        spec["age"].kind, spec["age"].dtype, spec["age"].shape  # ('fixed', 'float32', (1,))
    """
    strings = [t for t in signature.inputs.values() if t.dtype == "string" and t.name]
    if len(signature.inputs) != 1 or len(strings) != 1:
        return None
    parse = _find_parse_node(node_name(strings[0].name), meta_graph)
    if parse is None:
        return None
    try:
        return _spec_of(parse, meta_graph)
    except (KeyError, IndexError, ValueError):
        # A parse node whose keys are not constants (computed at run time): no static spec.
        # What no TensorFlow could run (a cycle, a constant that cannot be read or declares
        # more values than inspect builds) is a ModelError, which goes on up.
        return None


def _corrupt(meta_graph: _Graph, message: str) -> ModelError:
    """The error for a graph that cannot be what it says, naming the file it was read from."""
    where = meta_graph.file or meta_graph.path or "the SavedModel"
    return ModelError(f"{where}: {message}", path=meta_graph.path)


def _consumers(meta_graph: _Graph) -> dict[str, list[Any]]:
    table: dict[str, list[Any]] = {}
    for node in meta_graph.proto.graph_def.node:
        for name in node.input:
            if not name.startswith("^"):
                table.setdefault(node_name(name), []).append(node)
    return table


def _find_parse_node(start: str, meta_graph: _Graph) -> NodeDef | None:
    consumers = _consumers(meta_graph)
    frontier, seen = collections.deque([start]), {start}
    while frontier:
        current = frontier.popleft()
        for node in consumers.get(current, []):
            if node.op in _PARSE_OPS and node_name(node.input[0]) == current:
                return node
            if node.op in _PASS_THROUGH and node.name not in seen:
                seen.add(node.name)
                frontier.append(node.name)
    return None


def _const(meta_graph: _Graph, tensor_name: str) -> NodeDef:
    """The ``Const`` node a parse node's input reads, through Identity and Reshape nodes."""
    node = meta_graph.nodes[node_name(tensor_name)]
    passed: list[str] = []
    # Defaults of shaped features are reshaped constants; values are flattened anyway.
    while node.op in _FORWARDING:
        if node.name in passed:
            loop = " -> ".join([*passed[passed.index(node.name) :], node.name])
            raise _corrupt(
                meta_graph,
                f"node {node.name!r} is its own input ({loop}): a cycle of {'/'.join(_FORWARDING)} "
                "nodes that no constant ends, which TensorFlow cannot run",
            )
        passed.append(node.name)
        node = meta_graph.nodes[node_name(node.input[0])]
    if node.op != "Const":
        raise ValueError(f"{node.name} is a {node.op}, not a Const")
    return node


def _const_values(meta_graph: _Graph, tensor_name: str) -> list[Any]:
    """The flattened values of the constant behind ``tensor_name``, its declared size checked
    before anything is built from it."""
    node = _const(meta_graph, tensor_name)
    tensor = node.attr["value"].tensor
    dims = [int(d.size) for d in tensor.tensor_shape.dim]
    if len(dims) > MAX_RANK:
        raise _corrupt(
            meta_graph,
            f"constant {node.name!r} declares {len(dims)} dimensions; TensorFlow allows {MAX_RANK}",
        )
    count = element_count(dims)
    if count > MAX_VALUES:
        raise _corrupt(
            meta_graph,
            f"constant {node.name!r} declares shape {dims}, {count} values, in {tensor.ByteSize()} "
            f"bytes of the file; inspect builds at most {MAX_VALUES} values from a constant",
        )
    try:
        return tensor_values(tensor)
    except ValueError as exc:
        raise _corrupt(
            meta_graph, f"constant {node.name!r} of dtype {dtype_name(tensor.dtype)} cannot be read: {exc}"
        ) from None


def tensor_values(tensor: TensorProto) -> list[Any]:
    """Flatten a ``TensorProto``'s values into a Python list (strings decoded as UTF-8 when
    possible, else kept as bytes)."""
    try:
        values: list[Any] = decode_tensor(tensor).ravel().tolist()
    except (TensorDecodeError, TypeError) as exc:
        raise ValueError(str(exc)) from None
    if tensor.dtype == DT_STRING:
        values = [_decode(v) for v in values]
    return values


def _decode(value: bytes) -> str | bytes:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value


def _keys(meta_graph: _Graph, inputs: list[str]) -> list[str]:
    keys: list[str] = []
    for name in inputs:
        keys.extend(str(v) for v in _const_values(meta_graph, name))
    return keys


def _default(meta_graph: _Graph, key: str, tensor_name: str, shape: tuple[int, ...] | None) -> list[Any]:
    """A dense feature's default values; a non-empty one must fill its shape (when known)."""
    values = _const_values(meta_graph, tensor_name)
    if values and shape is not None and len(values) != element_count(shape):
        raise _corrupt(
            meta_graph,
            f"the default of feature {key!r} (node {node_name(tensor_name)!r}) has {len(values)} "
            f"values, but its shape {list(shape)} holds {element_count(shape)}",
        )
    return values


def _spec_of(node: NodeDef, meta_graph: _Graph) -> dict[str, FeatureSpecEntry]:
    attr = node.attr
    inputs = [i for i in node.input if not i.startswith("^")]
    tdense = list(attr["Tdense"].list.type)
    declared = [shape_of(s) for s in attr["dense_shapes"].list.shape]
    dense_shapes = [s or () for s in declared]
    sparse_types = list(attr["sparse_types"].list.type)
    num_sparse = len(sparse_types)
    num_dense = len(tdense)
    ragged_types: list[int] = []
    if node.op == "ParseExampleV2":
        # serialized, names, sparse_keys, dense_keys, ragged_keys, dense_defaults...
        sparse_keys = _keys(meta_graph, [inputs[2]])
        dense_keys = _keys(meta_graph, [inputs[3]])
        ragged_keys = _keys(meta_graph, [inputs[4]])
        defaults = inputs[5 : 5 + num_dense]
        ragged_types = list(attr["ragged_value_types"].list.type)
    else:
        # serialized, names, sparse_keys[Nsparse], dense_keys[Ndense], dense_defaults[Ndense]
        sparse_keys = _keys(meta_graph, inputs[2 : 2 + num_sparse])
        dense_keys = _keys(meta_graph, inputs[2 + num_sparse : 2 + num_sparse + num_dense])
        ragged_keys = []
        defaults = inputs[2 + num_sparse + num_dense : 2 + num_sparse + 2 * num_dense]
    out = _OutputNamer(node.name)
    spec: dict[str, FeatureSpecEntry] = {}
    sparse_tensors = [
        {"indices": out(i), "values": out(num_sparse + i), "dense_shape": out(2 * num_sparse + i)}
        for i in range(num_sparse)
    ]
    for key, dtype, tensors in zip(sparse_keys, sparse_types, sparse_tensors):
        spec[key] = FeatureSpecEntry(key, "var", dtype_name(dtype), (None,), None, tensors)
    first_dense = 3 * num_sparse
    for i, (key, dtype, shape) in enumerate(zip(dense_keys, tdense, dense_shapes)):
        dims = [int(d.size) for d in attr["dense_shapes"].list.shape[i].dim]
        if min(dims, default=0) < -1:  # -1 is unknown (a sequence's length); less is no size
            raise _corrupt(meta_graph, f"feature {key!r} of node {node.name!r} declares shape {dims}")
        known = tuple(d for d in shape if d is not None) if declared[i] is not None else None
        if known is not None and len(known) != len(shape):
            known = None  # an unknown dim: any number of values may fill it
        default = _default(meta_graph, key, defaults[i], known) if i < len(defaults) else []
        spec[key] = FeatureSpecEntry(
            key,
            "fixed",
            dtype_name(dtype),
            tuple(shape),
            default or None,
            {"value": out(first_dense + i)},
        )
    first_ragged = first_dense + num_dense
    num_ragged = len(ragged_keys)
    for i, (key, dtype) in enumerate(zip(ragged_keys, ragged_types)):
        tensors = {"values": out(first_ragged + i), "row_splits": out(first_ragged + num_ragged + i)}
        spec[key] = FeatureSpecEntry(key, "ragged", dtype_name(dtype), (None,), None, tensors)
    return dict(sorted(spec.items()))


class _OutputNamer:
    def __init__(self, node: str) -> None:
        self.node = node

    def __call__(self, index: int) -> str:
        return f"{self.node}:{index}"
