"""Read a SavedModel's protos into typed, read-only objects; never load or run the model.

``read_saved_model`` parses ``saved_model.pb`` (or ``saved_model.pbtxt``) and wraps each
MetaGraphDef, SignatureDef and TensorInfo in a small class with numpy-style dtypes and Python
shapes, keeping the raw proto behind ``.proto``.
"""

from __future__ import annotations

import functools
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any

from tfship._wire import (
    DEFAULT_SIGNATURE,
    FunctionDef,
    GraphDef,
    MetaGraphDef,
    SavedModel,
    SignatureDef,
    descriptor_pool,
    protos,
    version_dirs,
)
from tfship.errors import ModelError, SignatureNotFoundError
from tfship.inspect._featurespec import recover_feature_spec
from tfship.inspect._tensorinfo import FeatureSpecEntry, TensorInfo

SAVED_MODEL_PB = "saved_model.pb"
SAVED_MODEL_PBTXT = "saved_model.pbtxt"


class SignatureInfo:
    """One SignatureDef of a MetaGraph.

    Attributes:
        key: the signature key (``serving_default``, ``predict``, ...).
        method_name: e.g. ``tensorflow/serving/predict``.
        inputs: input key -> :class:`TensorInfo`, sorted by key.
        outputs: output key -> :class:`TensorInfo`, sorted by key.
        proto: the raw ``SignatureDef``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> sig = read_saved_model("m/1").meta_graph().signature()
        >>> sig.key, sorted(sig.inputs), sorted(sig.outputs)
        ('serving_default', ['x'], ['y'])
    """

    def __init__(self, key: str, proto: SignatureDef, meta_graph: MetaGraphInfo) -> None:
        self.key = key
        self.proto = proto
        self.method_name: str = proto.method_name
        self.inputs: dict[str, TensorInfo] = {
            k: TensorInfo.from_proto(k, proto.inputs[k]) for k in sorted(proto.inputs)
        }
        self.outputs: dict[str, TensorInfo] = {
            k: TensorInfo.from_proto(k, proto.outputs[k]) for k in sorted(proto.outputs)
        }
        self._meta_graph = meta_graph

    def __repr__(self) -> str:
        return (
            f"SignatureInfo(key={self.key!r}, method_name={self.method_name!r}, "
            f"inputs={list(self.inputs)}, outputs={list(self.outputs)})"
        )

    @functools.cached_property
    def feature_spec(self) -> dict[str, FeatureSpecEntry] | None:
        """The ``tf.Example`` features this signature parses, or ``None`` when it does not parse.

        Found for a signature whose one string input feeds a ParseExample/ParseExampleV2 node.

        Raises:
            ModelError: the graph cannot be what it says: a cycle of Identity nodes on the way
                to a constant, a constant that cannot be read or declares more values than
                inspect builds, a default that does not fill its feature's shape.
        """
        return recover_feature_spec(self, self._meta_graph)

    @property
    def internal(self) -> bool:
        """Whether the key is reserved to the loader (``__saved_model_init_op``): no client calls it."""
        return self.key.startswith("__")

    def output(self, key: str) -> TensorInfo:
        """Return one output by key; ``SignatureNotFoundError`` lists the keys that exist."""
        return _pick(self.outputs, key, f"output of signature {self.key!r}", self.key)

    def input(self, key: str) -> TensorInfo:
        """Return one input by key; ``SignatureNotFoundError`` lists the keys that exist."""
        return _pick(self.inputs, key, f"input of signature {self.key!r}", self.key)


def _pick(table: Mapping[str, TensorInfo], key: str, what: str, signature: str) -> TensorInfo:
    if key not in table:
        raise SignatureNotFoundError(
            f"no {what} named {key!r}; valid keys: {', '.join(table) or '(none)'}",
            signature=signature,
        )
    return table[key]


class MetaGraphInfo:
    """One MetaGraphDef (tag-set) of a SavedModel.

    Attributes:
        tags: the tag-set, in the order stored in the proto.
        signatures: signature key -> :class:`SignatureInfo`, sorted by key.
        proto: the raw ``MetaGraphDef``.
        file: the file it was read from (``None`` for one that came from elsewhere).

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> mg = read_saved_model("m/1").meta_graph(tags=("serve",))
        >>> "Mul" in mg.ops, "ParseExampleV2" in mg.ops
        (True, False)
    """

    def __init__(self, proto: MetaGraphDef, path: str | None = None, *, file: str | None = None) -> None:
        self.proto = proto
        self.path = path
        self.file = file
        self.tags: tuple[str, ...] = tuple(proto.meta_info_def.tags)
        self.signatures: dict[str, SignatureInfo] = {
            k: SignatureInfo(k, proto.signature_def[k], self) for k in sorted(proto.signature_def)
        }

    def __repr__(self) -> str:
        return f"MetaGraphInfo(tags={self.tags}, signatures={list(self.signatures)})"

    @functools.cached_property
    def ops(self) -> frozenset[str]:
        """Every op type the graph uses, including ops inside the functions it calls."""
        return frozenset(ops_used(self.proto.graph_def))

    @functools.cached_property
    def nodes(self) -> dict[str, Any]:
        """Top-level graph nodes by name (``NodeDef`` protos)."""
        return {node.name: node for node in self.proto.graph_def.node}

    def signature(self, key: str | None = None) -> SignatureInfo:
        """Return a signature by key (``None`` means ``serving_default``).

        Raises:
            SignatureNotFoundError: the key does not exist; the message lists the valid keys.
        """
        key = DEFAULT_SIGNATURE if key is None else key
        if key not in self.signatures:
            valid = ", ".join(self.signatures) or "(none)"
            raise SignatureNotFoundError(
                f"no signature {key!r} in the MetaGraph with tag-set {format_tags(self.tags)} "
                f"of {self.path or 'the SavedModel'}; valid signatures: {valid}",
                path=self.path,
                signature=key,
            )
        return self.signatures[key]


def ops_used(graph_def: GraphDef) -> set[str]:
    """Op types used by a GraphDef, walking the functions it calls (as saved_model_cli does)."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    used: set[str] = set()
    pending: list[FunctionDef] = []

    def mark(op: str) -> None:
        if op not in used and op in functions:
            pending.append(functions[op])
        used.add(op)

    def visit(nodes: Iterable[Any]) -> None:
        for node in nodes:
            mark(node.op)
            if node.op in ("PartitionedCall", "StatefulPartitionedCall"):
                mark(node.attr["f"].func.name)

    visit(graph_def.node)
    while pending:
        visit(pending.pop().node_def)
    return {op for op in used if op not in functions}


def format_tags(tags: Iterable[str]) -> str:
    """Render a tag-set for messages: ``'serve'`` or ``'serve, tpu'``."""
    return repr(", ".join(tags))


def _as_tag_set(tags: str | Iterable[str]) -> frozenset[str]:
    if isinstance(tags, str):
        tags = tags.split(",")
    # An empty tag is dropped, so "" means the empty tag-set (as saved_model_cli).
    return frozenset(t.strip() for t in tags if t.strip())


class SavedModelInfo:
    """A SavedModel read from its protos.

    Attributes:
        path: the export directory.
        file: the proto file that was read (``saved_model.pb`` or ``saved_model.pbtxt``).
        meta_graphs: one :class:`MetaGraphInfo` per tag-set, in file order.
        proto: the raw ``SavedModel``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> info = read_saved_model("m/1")
        >>> [mg.tags for mg in info.meta_graphs]
        [('serve',)]
    """

    def __init__(self, path: pathlib.Path, file: pathlib.Path, proto: SavedModel) -> None:
        self.path = path
        self.file = file
        self.proto = proto
        self.meta_graphs: list[MetaGraphInfo] = [
            MetaGraphInfo(mg, str(path), file=str(file)) for mg in proto.meta_graphs
        ]

    def __repr__(self) -> str:
        return f"SavedModelInfo(path={str(self.path)!r}, tag_sets={self.tag_sets})"

    @property
    def tag_sets(self) -> list[tuple[str, ...]]:
        """The tag-set of every MetaGraph, in file order."""
        return [mg.tags for mg in self.meta_graphs]

    def meta_graph(self, tags: str | Iterable[str] = ("serve",)) -> MetaGraphInfo:
        """Return the MetaGraph whose tag-set equals ``tags`` (order does not matter).

        ``tags`` may be a string with commas (``"serve,gpu"``); ``""`` is the empty tag-set.

        Raises:
            SignatureNotFoundError: no MetaGraph has that tag-set; the message lists the valid ones.
        """
        wanted = _as_tag_set(tags)
        for mg in self.meta_graphs:
            if frozenset(mg.tags) == wanted:
                return mg
        valid = "; ".join(format_tags(sorted(t)) for t in self.tag_sets) or "(none)"
        raise SignatureNotFoundError(
            f"no MetaGraph with tag-set {format_tags(sorted(wanted))} in {self.path}; "
            f"valid tag-sets: {valid}",
            path=str(self.path),
        )


def find_saved_model_file(path: str | os.PathLike[str]) -> pathlib.Path:
    """Return the ``saved_model.pb`` (preferred) or ``saved_model.pbtxt`` of an export directory.

    Raises:
        ModelError: the directory does not exist or holds neither file.
    """
    directory = pathlib.Path(path)
    if not directory.exists():
        raise ModelError(f"SavedModel directory {str(directory)!r} does not exist", path=str(path))
    if not directory.is_dir():
        raise ModelError(
            f"{str(directory)!r} is a file; expected a SavedModel directory holding "
            f"{SAVED_MODEL_PB} or {SAVED_MODEL_PBTXT}",
            path=str(path),
        )
    for name in (SAVED_MODEL_PB, SAVED_MODEL_PBTXT):
        if (directory / name).is_file():
            return directory / name
    numeric = [path.name for _, path in version_dirs(directory)]
    hint = f" (it holds versions {', '.join(numeric)}: pass one of them)" if numeric else ""
    raise ModelError(
        f"no SavedModel in {str(directory)!r}: expected {SAVED_MODEL_PB} or {SAVED_MODEL_PBTXT}{hint}",
        path=str(path),
    )


def read_saved_model(path: str | os.PathLike[str]) -> SavedModelInfo:
    """Read a SavedModel's protos (``saved_model.pb``, else ``saved_model.pbtxt``).

    The model is never loaded: no session is created and no TensorFlow op runs, so a model
    that cannot run here can still be inspected.

    Args:
        path: the export directory (e.g. ``export/best/1700000000``).

    Returns:
        A :class:`SavedModelInfo`.

    Raises:
        ModelError: the directory is missing, holds no SavedModel, or its proto is corrupt.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> info = read_saved_model("m/1")
        >>> info.meta_graph().signature().method_name
        'tensorflow/serving/predict'
    """
    file = find_saved_model_file(path)
    proto = protos().saved_model_pb2.SavedModel()
    data = file.read_bytes()
    try:
        if file.name == SAVED_MODEL_PB:
            proto.ParseFromString(data)
        else:
            from google.protobuf import text_format

            text_format.Merge(data.decode("utf-8"), proto, descriptor_pool=descriptor_pool())
    except Exception as exc:  # DecodeError, ParseError, UnicodeDecodeError: all mean corrupt
        raise ModelError(
            f"cannot parse {str(file)!r}: the file is corrupt or not a SavedModel ({exc})",
            path=str(path),
        ) from exc
    if not proto.meta_graphs:
        raise ModelError(f"{str(file)!r} holds no MetaGraph: it is empty or not a SavedModel", path=str(path))
    return SavedModelInfo(pathlib.Path(path), file, proto)
