"""``saved_model_cli show`` of TensorFlow 2.15.1, reproduced byte for byte from the protos.

The one deliberate difference: the ops set is printed sorted, so the output is deterministic.
Every function returns text; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterable

from tfship._wire import dtype_enum_name
from tfship.inspect._concrete import render_concrete_functions
from tfship.inspect._reader import MetaGraphInfo, SavedModelInfo
from tfship.inspect._tensorinfo import TensorInfo

NOTICE_LIST_OPS = "--list_ops must be paired with a tag-set or with --all.\n"


def render_tag_sets(info: SavedModelInfo) -> str:
    """The tag-set listing of ``show`` without options."""
    lines = ["The given SavedModel contains the following tag-sets:"]
    for tags in sorted(list(mg.tags) for mg in info.meta_graphs):
        lines.append(repr(", ".join(sorted(tags))))
    return "\n".join(lines) + "\n"


def render_signature_keys(meta_graph: MetaGraphInfo) -> str:
    """The signature-key listing of ``show --tag_set T``."""
    lines = ["The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:"]
    lines.extend(f'SignatureDef key: "{key}"' for key in sorted(meta_graph.signatures))
    return "\n".join(lines) + "\n"


def _tensor_lines(info: TensorInfo, pad: str) -> list[str]:
    proto = info.proto
    if proto.tensor_shape.unknown_rank:
        shape = "unknown_rank"
    else:
        shape = "(" + ", ".join(str(d.size) for d in proto.tensor_shape.dim) + ")"
    return [
        f"{pad}    dtype: {dtype_enum_name(proto.dtype)}",
        f"{pad}    shape: {shape}",
        f"{pad}    name: {proto.name}",
    ]


def render_signature(meta_graph: MetaGraphInfo, key: str, indent: int = 0) -> str:
    """The inputs/outputs/method block of one signature (``show --signature_def K``)."""
    sig = meta_graph.signature(key)
    pad = "  " * indent
    inner = "  " * (indent + 1)
    lines = [f"{pad}The given SavedModel SignatureDef contains the following input(s):"]
    for k, tensor in sig.inputs.items():
        lines.append(f"{pad}  inputs['{k}'] tensor_info:")
        lines.extend(_tensor_lines(tensor, inner))
    lines.append(f"{pad}The given SavedModel SignatureDef contains the following output(s):")
    for k, tensor in sig.outputs.items():
        lines.append(f"{pad}  outputs['{k}'] tensor_info:")
        lines.extend(_tensor_lines(tensor, inner))
    lines.append(f"{pad}Method name is: {sig.method_name}")
    return "\n".join(lines) + "\n"


def _set_repr(items: Iterable[str]) -> str:
    ordered = sorted(items)
    return "{" + ", ".join(repr(op) for op in ordered) + "}" if ordered else "set()"


def render_ops(meta_graph: MetaGraphInfo) -> str:
    """The ops line (``show --list_ops``), with the set sorted."""
    return (
        f"The MetaGraph with tag set {list(meta_graph.tags)!r} contains the following ops: "
        f"{_set_repr(meta_graph.ops)}\n"
    )


def render_all(info: SavedModelInfo) -> str:
    """Everything ``show --all`` prints: every MetaGraph, signature, ops and concrete function."""
    out: list[str] = []
    for mg in sorted(info.meta_graphs, key=lambda m: list(m.tags)):
        out.append(
            f"\nMetaGraphDef with tag-set: '{', '.join(mg.tags)}' contains the following SignatureDefs:\n"
        )
        for key in mg.signatures:
            out.append(f"\nsignature_def['{key}']:\n")
            out.append(render_signature(mg, key, indent=1))
        out.append(render_ops(mg))
    out.append(render_concrete_functions((mg.proto for mg in info.meta_graphs), file=str(info.file)))
    return "".join(out)


def render_show(
    info: SavedModelInfo,
    *,
    tag_set: str | None = None,
    signature: str | None = None,
    all: bool = False,
    list_ops: bool = False,
) -> str:
    """Render ``saved_model_cli show`` for the same options.

    Args:
        info: the SavedModel read by ``read_saved_model``.
        tag_set: comma-separated tags (``"serve"``, ``""`` for the empty set), like ``--tag_set``.
        signature: a signature key, like ``--signature_def`` (needs ``tag_set``).
        all: like ``--all``: everything, and the other options are ignored.
        list_ops: like ``--list_ops``: the ops of the tag-set's MetaGraph.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.inspect import read_saved_model
        >>> print(render_show(read_saved_model("m/1"), tag_set="serve"))
        The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:
        SignatureDef key: "__saved_model_init_op"
        SignatureDef key: "serving_default"
    """
    if all:
        return render_all(info)
    if tag_set is None:
        return (NOTICE_LIST_OPS if list_ops else "") + render_tag_sets(info)
    mg = info.meta_graph(tag_set)
    head = render_ops(mg) if list_ops else ""
    if signature is None:
        return head + render_signature_keys(mg)
    return head + render_signature(mg, signature)
