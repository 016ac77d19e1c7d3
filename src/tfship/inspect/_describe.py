"""The structured description of a SavedModel behind ``tfship inspect show --json``.

Schema ``tfship.inspect.show`` version 1 (keys are stable; new keys may be added)::

    {
      "schema": "tfship.inspect.show", "version": 1,
      "path": str, "file": "saved_model.pb" | "saved_model.pbtxt",
      "tag_sets": [[str, ...], ...],                      # in file order
      "variables": {"count": int, "bytes": int | null,    # from the graph's variable ops
                    "files_bytes": int,                   # size of variables/ on disk
                    "items": [{"name": str, "dtype": str, "shape": [int | null, ...] | null}]},
      "assets": [{"filename": str, "tensor": str | null, "present": bool}],
      "assets_extra": [str, ...],                         # files under assets.extra/
      "meta_graphs": [{
        "tags": [str, ...],
        "signatures": {key: {
          "method_name": str,
          "inputs":  {key: TENSOR}, "outputs": {key: TENSOR},
          "feature_spec": null | {name: {"kind": "fixed" | "var" | "ragged", "dtype": str,
                                          "shape": [int | null, ...], "default": list | null,
                                          "required": bool, "tensors": {role: tensor name}}}}},
        "aliases": [{"tensor": str, "uses": ["<signature>.inputs.<key>", ...]}],
        "ops": [str, ...],                                # sorted
        "functions": [{"name": str, "options": [{"function": str, "args": [VALUE, ...],
                       "kwargs": {str: VALUE}}]}]         # TF2 object graphs only, else []
      }]
    }
    TENSOR = {"dtype": str, "shape": [int | null, ...] | null, "encoding": "dense" |
              "coo_sparse" | "composite", "name": str | null, "components": {str: str}}

VALUE is ``{"tensor_spec": {"shape", "dtype", "name"}}``, a JSON scalar, a list, an object, or
the ``repr`` of another ``tf.TypeSpec``. ``dtype`` is a numpy-style name (``float32``,
``int64``, ``string``); a ``null`` dim is unknown (usually the batch) and a ``null`` shape is an
unknown rank.
"""

from __future__ import annotations

import os
from typing import Any

from tfship._wire import dtype_name
from tfship.inspect._concrete import concrete_functions
from tfship.inspect._reader import MetaGraphInfo, SavedModelInfo, SignatureInfo
from tfship.inspect._tensorinfo import MAX_ELEMENTS, FeatureSpecEntry, TensorInfo, element_count, shape_of

SCHEMA = "tfship.inspect.show"
SCHEMA_VERSION = 1
_VARIABLE_OPS = ("VarHandleOp", "VariableV2", "Variable")
_ITEMSIZE = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
}


def tensor_dict(info: TensorInfo) -> dict[str, Any]:
    """One input or output as JSON."""
    return {
        "dtype": info.dtype,
        "shape": None if info.shape is None else list(info.shape),
        "encoding": info.encoding,
        "name": info.name or None,
        "components": dict(info.components),
    }


def feature_dict(entry: FeatureSpecEntry) -> dict[str, Any]:
    """One recovered ``tf.Example`` feature as JSON."""
    return {
        "kind": entry.kind,
        "dtype": entry.dtype,
        "shape": list(entry.shape),
        "default": entry.default,
        "required": entry.required,
        "tensors": dict(entry.tensors),
    }


def signature_dict(sig: SignatureInfo) -> dict[str, Any]:
    """One signature as JSON."""
    spec = sig.feature_spec
    return {
        "method_name": sig.method_name,
        "inputs": {k: tensor_dict(t) for k, t in sig.inputs.items()},
        "outputs": {k: tensor_dict(t) for k, t in sig.outputs.items()},
        "feature_spec": None if spec is None else {k: feature_dict(e) for k, e in spec.items()},
    }


def aliases(mg: MetaGraphInfo) -> list[dict[str, Any]]:
    """Graph tensors that appear under more than one signature key (``inputs``/``examples``)."""
    uses: dict[str, list[str]] = {}
    for key, sig in mg.signatures.items():
        for direction, table in (("inputs", sig.inputs), ("outputs", sig.outputs)):
            for k, tensor in table.items():
                for name in tensor.tensor_names:
                    uses.setdefault(name, []).append(f"{key}.{direction}.{k}")
    return [{"tensor": t, "uses": u} for t, u in sorted(uses.items()) if len(u) > 1 and t]


def variables(info: SavedModelInfo) -> dict[str, Any]:
    """Variables declared in the graphs (names, dtypes, shapes, bytes) and their size on disk."""
    items: dict[str, dict[str, Any]] = {}
    for mg in info.meta_graphs:
        for node in mg.proto.graph_def.node:
            if node.op in _VARIABLE_OPS:
                name = node.attr["shared_name"].s.decode() or node.name
                shape = shape_of(node.attr["shape"].shape)
                items.setdefault(
                    name,
                    {
                        "name": name,
                        "dtype": dtype_name(node.attr["dtype"].type),
                        "shape": None if shape is None else list(shape),
                    },
                )
    total: int | None = 0
    for item in items.values():
        size = _ITEMSIZE.get(item["dtype"])
        if total is None or size is None or item["shape"] is None or None in item["shape"]:
            total = None
            continue
        count = element_count(item["shape"])
        if count > MAX_ELEMENTS:  # more than TensorFlow allows: no size to add up
            total = None
            continue
        total += count * size
    files = info.path / "variables"
    on_disk = sum(p.stat().st_size for p in files.iterdir() if p.is_file()) if files.is_dir() else 0
    ordered = [items[k] for k in sorted(items)]
    return {"count": len(items), "bytes": total, "files_bytes": on_disk, "items": ordered}


def assets(info: SavedModelInfo) -> list[dict[str, Any]]:
    """Asset files the graphs name, and whether each is present under ``assets/``."""
    seen: dict[str, dict[str, Any]] = {}
    for mg in info.meta_graphs:
        for asset in mg.proto.asset_file_def:
            seen.setdefault(
                asset.filename,
                {
                    "filename": asset.filename,
                    "tensor": asset.tensor_info.name or None,
                    "present": (info.path / "assets" / asset.filename).is_file(),
                },
            )
        og = mg.proto.object_graph_def
        for node in og.nodes:
            if node.WhichOneof("kind") == "asset":
                filename = _tf2_asset_filename(mg, node.asset.asset_file_def_index)
                if filename:
                    seen.setdefault(
                        filename,
                        {
                            "filename": filename,
                            "tensor": None,
                            "present": (info.path / "assets" / filename).is_file(),
                        },
                    )
    return [seen[k] for k in sorted(seen)]


def _tf2_asset_filename(mg: MetaGraphInfo, index: int) -> str | None:
    files = mg.proto.asset_file_def
    return files[index].filename if 0 <= index < len(files) else None


def assets_extra(info: SavedModelInfo) -> list[str]:
    """Relative paths of the files under ``assets.extra/`` (warmup requests, metadata)."""
    root = info.path / "assets.extra"
    if not root.is_dir():
        return []
    found = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(found)


def meta_graph_dict(mg: MetaGraphInfo) -> dict[str, Any]:
    """One MetaGraph as JSON."""
    return {
        "tags": list(mg.tags),
        "signatures": {k: signature_dict(s) for k, s in mg.signatures.items()},
        "aliases": aliases(mg),
        "ops": sorted(mg.ops),
        "functions": concrete_functions(mg.proto, file=mg.file),
    }


def describe(info: SavedModelInfo) -> dict[str, Any]:
    """The whole SavedModel as a JSON-ready dict (schema in this module's docstring).

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.inspect import read_saved_model
        >>> doc = describe(read_saved_model("m/1"))
        >>> doc["meta_graphs"][0]["signatures"]["serving_default"]["method_name"]
        'tensorflow/serving/predict'
    """
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "path": str(info.path),
        "file": info.file.name,
        "tag_sets": [list(t) for t in info.tag_sets],
        "variables": variables(info),
        "assets": assets(info),
        "assets_extra": assets_extra(info),
        "meta_graphs": [meta_graph_dict(mg) for mg in info.meta_graphs],
    }
