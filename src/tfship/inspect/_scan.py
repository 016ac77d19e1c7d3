"""Scan a SavedModel for denylisted ops (file I/O and printing, by default).

Unlike ``saved_model_cli scan``, every op in every function of the library is scanned (an op in
a loop body is still found), and finding one is a negative verdict (exit code 3).
"""

from __future__ import annotations

from collections.abc import Iterable

from tfship.errors import VerdictError
from tfship.inspect._reader import MetaGraphInfo, SavedModelInfo

DEFAULT_DENYLIST: frozenset[str] = frozenset({"ReadFile", "WriteFile", "PrintV2"})
"""The ops ``scan_saved_model`` refuses when it is given no denylist of its own."""

#: Ops that reach the host when they run: they read, write or list its files (``PrintV2`` can
#: print to a file) or run Python code. ``promote`` and ``inspect check --run`` refuse to load
#: an export that uses one unless it is allowed by name (``--allow-op``): loading runs the
#: export's init ops, and a request runs its signatures.
HOST_EFFECT_OPS: frozenset[str] = DEFAULT_DENYLIST | frozenset(
    {
        "PyFunc",
        "PyFuncStateless",
        "EagerPyFunc",
        "MatchingFiles",
        "CreateSummaryFileWriter",
        "DatasetToTFRecord",
    }
)


class DenylistedOpError(VerdictError):
    """Raised when a SavedModel uses a denylisted op (``scan``; exit code 3)."""


def parse_denylist(text: str | None) -> frozenset[str]:
    """``"A,B"`` -> ``{"A", "B"}``; ``None`` is the default list and ``""`` the empty one.

    Example:
        >>> sorted(parse_denylist("ReadFile, PyFunc"))
        ['PyFunc', 'ReadFile']
    """
    if text is None:
        return DEFAULT_DENYLIST
    return frozenset(op.strip() for op in text.split(",") if op.strip())


def all_ops(mg: MetaGraphInfo) -> frozenset[str]:
    """Every op type in the graph and in every function of its library (called or not)."""
    graph = mg.proto.graph_def
    functions = {f.signature.name for f in graph.library.function}
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    return frozenset(ops - functions)


def host_effects(mg: MetaGraphInfo, allowed: Iterable[str] = ()) -> list[str]:
    """The ops of ``HOST_EFFECT_OPS`` the MetaGraph uses, but those ``allowed``, sorted.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.inspect import read_saved_model
        >>> host_effects(read_saved_model("m/1").meta_graph("serve"))
        []
    """
    return sorted((all_ops(mg) & HOST_EFFECT_OPS) - frozenset(allowed))


def host_effects_refusal(ops: Iterable[str]) -> str:
    """Why an export was not loaded, naming its ops and the flag that allows them.

    Example:
        >>> host_effects_refusal(["WriteFile"]).endswith("(allow it with --allow-op WriteFile)")
        True
    """
    names = sorted(ops)
    flags = " ".join(f"--allow-op {name}" for name in names)
    what = "an op" if len(names) == 1 else "ops"
    return (
        f"uses {', '.join(names)}, {what} with side effects on the host: refused before "
        f"loading (allow {'it' if len(names) == 1 else 'them'} with {flags})"
    )


def scan_saved_model(
    info: SavedModelInfo, denylist: Iterable[str] = DEFAULT_DENYLIST, *, tags: str | None = None
) -> list[tuple[MetaGraphInfo, frozenset[str]]]:
    """Return ``(meta_graph, denylisted ops found)`` for the tag-set (or every MetaGraph).

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.inspect import read_saved_model
        >>> [(mg.tags, sorted(found)) for mg, found in scan_saved_model(read_saved_model("m/1"))]
        [(('serve',), [])]
        >>> [sorted(found) for _, found in scan_saved_model(read_saved_model("m/1"), denylist=["Mul"])]
        [['Mul']]
    """
    wanted = frozenset(denylist)
    graphs = [info.meta_graph(tags)] if tags is not None else info.meta_graphs
    return [(mg, all_ops(mg) & wanted) for mg in graphs]


def _set_text(items: Iterable[str]) -> str:
    ordered = sorted(items)
    return "{" + ", ".join(repr(i) for i in ordered) + "}" if ordered else "set()"


def render_scan(results: list[tuple[MetaGraphInfo, frozenset[str]]], denylist: Iterable[str]) -> str:
    """saved_model_cli's wording, with sorted sets."""
    lines = []
    for mg, found in results:
        tags = list(mg.tags)
        if found:
            lines.append(
                f"MetaGraph with tag set {tags} contains the following denylisted ops: {_set_text(found)}"
            )
        else:
            lines.append(
                f"MetaGraph with tag set {tags} does not contain the denylisted ops: {_set_text(denylist)}"
            )
    return "\n".join(lines) + "\n"
