"""The ``Concrete Functions`` section of ``saved_model_cli show --all``, built from the protos.

saved_model_cli loads the model to list the functions attached to its root object; we read the
same facts from the SavedObjectGraph: the root's children that are functions, and each concrete
function's ``canonicalized_input_signature``.

Within one function, saved_model_cli orders the options by the name TensorFlow gives each
concrete function while loading, ``__inference_<name>_<uid>``, compared as strings. The uid
comes from a process-wide counter that loading advances in a fixed way: one for the new graph,
one for the load, one per custom gradient, then, per function in the loader's topological order,
one for its graph, one per output tensor of every op in its body (arguments included), and one
for its name. We replay that count so the order (string order: ``_138`` sorts before ``_92``)
is the same as TensorFlow's.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tfship._wire import (
    AttrValue,
    FunctionDef,
    FunctionDefLibrary,
    MetaGraphDef,
    NodeDef,
    OpDef,
    SavedBareConcreteFunction,
    SavedConcreteFunction,
    SavedObjectGraph,
    StructuredValue,
    TensorShapeProto,
    dtype_name,
)
from tfship.errors import ModelError

_WRAPPER_NAME = re.compile(r"^__inference_(.*)_\d+$")
_CALL_OPS = ("StatefulPartitionedCall", "PartitionedCall")


class _Unreadable(ValueError):
    """The object graph cannot be what it says; the public functions name the file."""


def _refused(file: str | None, exc: _Unreadable) -> ModelError:
    return ModelError(f"{file or 'the SavedModel'}: its object graph cannot be read: {exc}", path=file)


# --- Python values that print like the TensorFlow objects saved_model_cli prints -------------


class _DType:
    def __init__(self, enum_value: int) -> None:
        self.name = dtype_name(enum_value)

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: {self.name!r}>"


class _Shape:
    def __init__(self, dims: tuple[int | None, ...] | None) -> None:
        self.dims = dims

    def __str__(self) -> str:
        if self.dims is None:
            return "<unknown>"
        inner = ", ".join(str(d) for d in self.dims)
        return f"({inner},)" if len(self.dims) == 1 else f"({inner})"

    def __repr__(self) -> str:
        if self.dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self.dims)!r})"

    def __iter__(self) -> Iterator[int | None]:
        return iter(self.dims or ())


class TensorSpecValue:
    """A stand-in for ``tf.TensorSpec`` with the same ``repr``."""

    def __init__(self, shape: _Shape, dtype: _DType, name: str | None) -> None:
        self.shape, self.dtype, self.name = shape, dtype, name

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name!r})"


class _TypeSpec:
    def __init__(self, class_name: str, state: Any) -> None:
        self.class_name, self.state = class_name, state

    def __repr__(self) -> str:
        return f"{self.class_name}{self.state!r}"


_TYPE_SPEC_CLASSES = {
    "SPARSE_TENSOR_SPEC": "SparseTensorSpec",
    "INDEXED_SLICES_SPEC": "IndexedSlicesSpec",
    "RAGGED_TENSOR_SPEC": "RaggedTensorSpec",
    "TENSOR_ARRAY_SPEC": "TensorArraySpec",
    "DATA_DATASET_SPEC": "DatasetSpec",
    "DATA_ITERATOR_SPEC": "IteratorSpec",
    "OPTIONAL_SPEC": "OptionalSpec",
    "PER_REPLICA_SPEC": "PerReplicaSpec",
    "VARIABLE_SPEC": "VariableSpec",
    "ROW_PARTITION_SPEC": "RowPartitionSpec",
}


def _shape(proto: TensorShapeProto) -> _Shape:
    if proto.unknown_rank:
        return _Shape(None)
    return _Shape(tuple(None if d.size < 0 else d.size for d in proto.dim))


def decode(value: StructuredValue) -> Any:
    """Turn a ``StructuredValue`` proto into Python values that print as TensorFlow's do."""
    kind = value.WhichOneof("kind")
    if kind in (None, "none_value"):
        return None
    handler = _DECODERS.get(kind)
    return handler(value) if handler else getattr(value, kind)


def _named_tuple(value: StructuredValue) -> tuple[Any, ...]:
    nt = value.named_tuple_value
    keys = [p.key for p in nt.values]
    try:
        cls = collections.namedtuple(nt.name or "NamedTuple", keys, rename=True)  # type: ignore[misc]
    except ValueError:  # what TensorFlow's loader would fail on too
        raise _Unreadable(f"the named tuple {nt.name!r} has no valid Python name") from None
    return cls(*[decode(p.value) for p in nt.values])


def _type_spec(value: StructuredValue) -> _TypeSpec:
    spec = value.type_spec_value
    try:
        enum = type(spec).TypeSpecClass.Name(spec.type_spec_class)
    except ValueError:  # a class newer than these protos (or none at all): shown by number
        enum = f"TypeSpecClass({spec.type_spec_class})"
    name = spec.type_spec_class_name or _TYPE_SPEC_CLASSES.get(enum, enum)
    return _TypeSpec(name, decode(spec.type_state))


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "float64_value": lambda v: float(v.float64_value),
    "int64_value": lambda v: int(v.int64_value),
    "string_value": lambda v: str(v.string_value),
    "bool_value": lambda v: bool(v.bool_value),
    "list_value": lambda v: [decode(x) for x in v.list_value.values],
    "tuple_value": lambda v: tuple(decode(x) for x in v.tuple_value.values),
    # by key: a map's order is protobuf's, which from protobuf 5 changes from process to process
    "dict_value": lambda v: {k: decode(v.dict_value.fields[k]) for k in sorted(v.dict_value.fields)},
    "named_tuple_value": _named_tuple,
    "tensor_shape_value": lambda v: _Shape(
        None
        if v.tensor_shape_value.unknown_rank
        else tuple(None if d.size < 0 else d.size for d in v.tensor_shape_value.dim)
    ),
    "tensor_dtype_value": lambda v: _DType(v.tensor_dtype_value),
    "tensor_spec_value": lambda v: TensorSpecValue(
        _shape(v.tensor_spec_value.shape),
        _DType(v.tensor_spec_value.dtype),
        v.tensor_spec_value.name or None,
    ),
    "bounded_tensor_spec_value": lambda v: TensorSpecValue(
        _shape(v.bounded_tensor_spec_value.shape),
        _DType(v.bounded_tensor_spec_value.dtype),
        v.bounded_tensor_spec_value.name or None,
    ),
    "type_spec_value": _type_spec,
}


# --- the load order replay ------------------------------------------------------------------


class _OutputCounter:
    """Counts output tensors of nodes, from the op definitions stored in the MetaGraph."""

    def __init__(self, meta_graph: MetaGraphDef) -> None:
        self.op_defs = {op.name: op for op in meta_graph.meta_info_def.stripped_op_list.op}
        self.functions = {f.signature.name: f for f in meta_graph.graph_def.library.function}

    def __call__(self, node: NodeDef) -> int:
        if node.op in self.functions:
            return sum(self._arg_count(a, node) for a in self.functions[node.op].signature.output_arg)
        op_def = self.op_defs.get(node.op)
        if op_def is None:
            return len(node.attr["Tout"].list.type) if node.op in _CALL_OPS else 1
        return sum(self._arg_count(arg, node, op_def) for arg in op_def.output_arg)

    @staticmethod
    def _arg_count(arg: Any, node: NodeDef, op_def: OpDef | None = None) -> int:  # arg: an OpDef.ArgDef
        if arg.number_attr:
            return int(_attr(node, arg.number_attr, op_def).i)
        if arg.type_list_attr:
            return len(_attr(node, arg.type_list_attr, op_def).list.type)
        return 1


def _attr(node: NodeDef, name: str, op_def: OpDef | None) -> AttrValue:
    if name in node.attr:
        return node.attr[name]
    for attr in op_def.attr if op_def is not None else ():
        if attr.name == name:
            return attr.default_value
    return node.attr[name]


def _gradient_op_type(node: NodeDef) -> bytes | None:
    if "_gradient_op_type" in node.attr and node.op not in _CALL_OPS:
        return bytes(node.attr["_gradient_op_type"].s)
    return None


def _deps(fdef: FunctionDef, names: set[str], gradient_names: dict[bytes, str]) -> set[str]:
    deps: set[str] = set()
    for node in fdef.node_def:
        grad = _gradient_op_type(node)
        if node.op in names:
            deps.add(node.op)
        elif grad and grad in gradient_names:
            deps.add(gradient_names[grad])
        else:
            for value in node.attr.values():
                which = value.WhichOneof("value")
                if which == "func":
                    deps.add(value.func.name)
                elif which == "list":
                    deps.update(f.name for f in value.list.func)
    return deps


def _load_order(library: FunctionDefLibrary) -> list[FunctionDef]:
    """The loader's topological order of the function library (a LIFO of ready functions)."""
    names = {f.signature.name for f in library.function}
    gradient_names = {
        g.registered_op_type.encode(): g.gradient_func
        for g in library.registered_gradients
        if g.registered_op_type
    }
    deps = {f.signature.name: _deps(f, names, gradient_names) for f in library.function}
    edges: dict[str, list[str]] = collections.defaultdict(list)
    in_count: dict[str, int] = collections.defaultdict(int)
    for name, needed in deps.items():
        for dep in needed:
            edges[dep].append(name)
            in_count[name] += 1
    ready = [f.signature.name for f in library.function if in_count[f.signature.name] == 0]
    order: list[str] = []
    while ready:
        current = ready.pop()
        order.append(current)
        for dest in edges[current]:
            in_count[dest] -= 1
            if not in_count[dest]:
                ready.append(dest)
    by_name = {f.signature.name: f for f in library.function}
    return [by_name[n] for n in order]


def loaded_names(meta_graph: MetaGraphDef) -> dict[str, str]:
    """Map each library function to the name TensorFlow's loader gives its concrete function."""
    library = meta_graph.graph_def.library
    count_outputs = _OutputCounter(meta_graph)
    uid = 1  # the fresh Graph saved_model_cli loads into takes uid 0
    uid += 1  # the load's shared-name suffix
    uid += sum(1 for g in library.registered_gradients if g.registered_op_type)
    names: dict[str, str] = {}
    for fdef in _load_order(library):
        uid += 1  # the function's graph
        uid += len(fdef.signature.input_arg)  # one placeholder per argument
        uid += sum(count_outputs(node) for node in fdef.node_def)
        match = _WRAPPER_NAME.match(fdef.signature.name)
        clean = match.group(1) if match else fdef.signature.name
        names[fdef.signature.name] = f"__inference_{clean}_{uid}"
        uid += 1
    return names


# --- printing ---------------------------------------------------------------------------------


def _quoted(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def _print_args(out: list[str], arguments: Iterable[Any], kind: str = "Argument") -> None:
    pad = "  " * 4
    for index, element in enumerate(arguments, 1):
        out.append(f"{pad}{kind} #{index}\n")
        if isinstance(element, str):
            out.append(f"{pad}  {element}\n")
        elif isinstance(element, TensorSpecValue):
            out.append(f"{'  ' * 5}{element.name}: {element!r}\n")
        elif isinstance(element, dict):
            items = "".join(f"'{k}': {_quoted(v)}, " for k, v in element.items())
            out.append(f"{pad}  DType: dict\n{pad}  Value: {{{items}\b\b}}\n")
        elif isinstance(element, (list, tuple, _Shape)):
            items = "".join(f"{_quoted(v)}, " for v in element)
            name = "TensorShape" if isinstance(element, _Shape) else type(element).__name__
            out.append(f"{pad}  DType: {name}\n{pad}  Value: [{items}\b\b]\n")
        else:
            name = _type_name(element)
            out.append(f"{pad}  DType: {name}\n{pad}  Value: {element}\n")


def _type_name(element: object) -> str:
    if isinstance(element, _TypeSpec):
        return element.class_name
    if isinstance(element, _DType):
        return "DType"
    return type(element).__name__


def _function_children(
    object_graph: SavedObjectGraph,
) -> list[tuple[str, list[str], SavedBareConcreteFunction | None]]:
    """(name, concrete function names, bare node or None) per function child of the root."""
    nodes = object_graph.nodes
    children = []
    for ref in sorted(nodes[0].children, key=lambda r: r.local_name) if nodes else []:
        if not 0 <= ref.node_id < len(nodes):
            raise _Unreadable(
                f"the root's child {ref.local_name!r} is node {ref.node_id}, of {len(nodes)} nodes"
            )
        node = nodes[ref.node_id]
        kind = node.WhichOneof("kind")
        if kind == "function":
            children.append((ref.local_name, list(node.function.concrete_functions), None))
        elif kind == "bare_concrete_function":
            bare = node.bare_concrete_function
            children.append((ref.local_name, [bare.concrete_function_name], bare))
    return children


def _arguments(saved: SavedConcreteFunction, function: str) -> tuple[Any, Any]:
    """A concrete function's ``(args, kwargs)`` from its canonicalized input signature."""
    signature = decode(saved.canonicalized_input_signature)
    if not signature:
        return (), {}
    if not (
        isinstance(signature, tuple)
        and len(signature) == 2
        and isinstance(signature[0], (list, tuple))
        and isinstance(signature[1], dict)
    ):
        raise _Unreadable(f"the input signature of {function!r} is not a pair of arguments and keywords")
    return signature


def render_concrete_functions(meta_graphs: Iterable[Any], *, file: str | None = None) -> str:
    """Return the ``Concrete Functions`` section (empty when no MetaGraph has an object graph).

    Raises:
        ModelError: the object graph cannot be what it says; the message names ``file``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.inspect import read_saved_model
        >>> print(render_concrete_functions([read_saved_model("m/1").meta_graph().proto]))
        <BLANKLINE>
        Concrete Functions:
          Function Name: 'f'
            Option #1
              Callable with:
                Argument #1
                  x: TensorSpec(shape=(None, 3), dtype=tf.float32, name='x')
    """
    meta_graphs = list(meta_graphs)
    with_objects = [mg for mg in meta_graphs if mg.HasField("object_graph_def")]
    if not with_objects:
        return ""
    # tf.saved_model.load reads the first MetaGraph (or the one of the serving tag-set).
    meta_graph = with_objects[0]
    object_graph = meta_graph.object_graph_def
    names = loaded_names(meta_graph)
    out = ["\nConcrete Functions:"]
    try:
        for child_name, functions, bare in _function_children(object_graph):
            out.append(f"\n  Function Name: '{child_name}'\n")
            ordered = sorted(functions, key=lambda f: names.get(f, f))
            for index, function in enumerate(ordered, 1):
                _render_option(out, index, object_graph, function, bare)
    except _Unreadable as exc:
        raise _refused(file, exc) from None
    return "".join(out)


def _render_option(
    out: list[str],
    index: int,
    object_graph: SavedObjectGraph,
    function: str,
    bare: SavedBareConcreteFunction | None,
) -> None:
    args: Any = None
    kwargs: Any = None
    saved = object_graph.concrete_functions.get(function)
    if saved is not None and saved.HasField("canonicalized_input_signature"):
        args, kwargs = _arguments(saved, function)
    elif bare is not None and bare.argument_keywords:
        args = list(bare.argument_keywords)
    if args:
        out.append(f"    Option #{index}\n      Callable with:\n")
        _print_args(out, args)
    if kwargs:
        _print_args(out, kwargs, "Named Argument")


def _jsonable(value: object) -> Any:
    if isinstance(value, TensorSpecValue):
        dims = value.shape.dims
        return {
            "tensor_spec": {
                "shape": None if dims is None else list(dims),
                "dtype": value.dtype.name,
                "name": value.name,
            }
        }
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def concrete_functions(meta_graph: MetaGraphDef, *, file: str | None = None) -> list[dict[str, Any]]:
    """The root object's functions as JSON: per function, its options (concrete functions) in
    saved_model_cli's order, each with positional ``args`` and keyword ``kwargs``.

    Raises:
        ModelError: the object graph cannot be what it says; the message names ``file``.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.inspect import read_saved_model
        >>> [f["name"] for f in concrete_functions(read_saved_model("m/1").meta_graph().proto)]
        ['f']
    """
    if not meta_graph.HasField("object_graph_def"):
        return []
    try:
        return _functions_json(meta_graph)
    except _Unreadable as exc:
        raise _refused(file, exc) from None


def _functions_json(meta_graph: MetaGraphDef) -> list[dict[str, Any]]:
    object_graph = meta_graph.object_graph_def
    names = loaded_names(meta_graph)
    functions = []
    for child_name, function_names, bare in _function_children(object_graph):
        options = []
        for function in sorted(function_names, key=lambda f: names.get(f, f)):
            saved = object_graph.concrete_functions.get(function)
            args: Any = []
            kwargs: Any = {}
            if saved is not None and saved.HasField("canonicalized_input_signature"):
                args, kwargs = _arguments(saved, function)
            elif bare is not None:
                args = list(bare.argument_keywords)
            options.append({"function": function, "args": _jsonable(args), "kwargs": _jsonable(kwargs)})
        functions.append({"name": child_name, "options": options})
    return functions
