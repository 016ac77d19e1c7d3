"""Variables a signature reads that the export's restore step never writes, from the protos alone.

A TF1 session (TF Serving, ``tf.compat.v1`` loaders, ``saved_model_cli run``) loads a SavedModel
by running its saver's restore op, then its init op, then the signature's fetches. If the
signature reads a variable that neither op writes, every request fails with ``Could not find
variable ...``. Keras 3 models saved with ``tf.saved_model.save`` are such exports: their
signature functions capture one set of variable handles while the restore function assigns
another (``tf.saved_model.load`` runs them, as it restores through the object graph).

The test follows the graph backwards: variable nodes reachable from a signature's outputs,
minus those reachable from the restore and init ops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tfship._wire import NodeDef, TensorInfoProto
from tfship.inspect._reader import MetaGraphInfo
from tfship.inspect._tensorinfo import node_name

#: Node types that hold a variable (resource handles in TF2, ref variables in TF1 graphs).
VARIABLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})
_INIT_COLLECTIONS = ("saved_model_main_op", "legacy_init_op", "saved_model_legacy_init_op")

#: What to do about such an export, for every message that names the defect.
REMEDY = (
    "this export's signatures read variables its restore step never writes; re-export with model.export()"
)


def _reachable(nodes: Mapping[str, Any], starts: Iterable[str]) -> set[str]:
    """Names of the nodes ``starts`` depend on (data and control inputs), themselves included."""
    seen: set[str] = set()
    stack = [name for name in starts if name in nodes]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(n for n in map(node_name, nodes[name].input) if n in nodes and n not in seen)
    return seen


def _writer_roots(mg: MetaGraphInfo) -> list[str]:
    proto = mg.proto
    roots = [node_name(proto.saver_def.restore_op_name)] if proto.saver_def.restore_op_name else []
    init = mg.signatures.get("__saved_model_init_op")
    if init is not None:
        roots += [node_name(t.name) for t in init.outputs.values() if t.name]
    for key in _INIT_COLLECTIONS:
        if key in proto.collection_def:
            roots += [node_name(n) for n in proto.collection_def[key].node_list.value]
    return roots


def unrestored_variables(mg: MetaGraphInfo) -> dict[str, list[str]]:
    """Signature key -> variables its outputs read that the restore and init ops never write.

    Empty for a sound export. Variables are named by their ``shared_name`` (the name a session
    error shows), falling back to the node name.

    A Keras 3 ``Sequential`` saved with ``tf.saved_model.save(model)`` gives
    ``{'serving_default': ['sequential/dense/bias', 'sequential/dense/kernel', ...]}``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> m.v = tf.Variable(2.0)
        >>> m.g = tf.function(lambda x: {"y": m.v * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/2", signatures=m.g)
        >>> from tfship.inspect import read_saved_model
        >>> unrestored_variables(read_saved_model("m/2").meta_graph())
        {}
    """
    nodes = mg.nodes
    written = _reachable(nodes, _writer_roots(mg))
    found: dict[str, list[str]] = {}
    for key, sig in mg.signatures.items():
        if key.startswith("__"):
            continue
        outputs = [node_name(name) for t in sig.outputs.values() for name in _tensor_names(t)]
        read = _reachable(nodes, outputs)
        lost = sorted(_variable_name(nodes[n]) for n in read - written if nodes[n].op in VARIABLE_OPS)
        if lost:
            found[key] = lost
    return found


def _tensor_names(tensor: TensorInfoProto) -> list[str]:
    if tensor.name:
        return [tensor.name]
    return [name for name in getattr(tensor, "components", {}).values() if name]


def _variable_name(node: NodeDef) -> str:
    shared = node.attr["shared_name"].s.decode() if "shared_name" in node.attr else ""
    return shared or node.name


def describe_unrestored(found: Mapping[str, list[str]], limit: int = 3) -> str:
    """One line: which signatures read which unrestored variables, and what to do.

    Example:
        >>> describe_unrestored({"serving_default": ["a/kernel", "a/bias"]})
        "signature 'serving_default' reads 2 variables (a/kernel, a/bias) that the restore step never writes, so a TF1 session (TF Serving) cannot run it; re-export with model.export()"
    """  # noqa: E501
    parts = []
    for key, names in sorted(found.items()):
        shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
        parts.append(f"signature {key!r} reads {len(names)} variables ({shown})")
    return (
        "; ".join(parts) + " that the restore step never writes, so a TF1 session (TF Serving) "
        "cannot run it; re-export with model.export()"
    )
