"""TensorFlow's protocol buffer modules, without importing TensorFlow itself.

The generated ``*_pb2`` modules of TensorFlow and TF Serving only need ``google.protobuf``, but
their parent packages' ``__init__`` files import all of TensorFlow (about two seconds and 400 MB).
We load those generated files under a private package, ``_tfship_protos``, with their imports
pointed there too, so ``sys.modules["tensorflow"]`` is never touched (a concurrent or later
``import tensorflow`` is unaffected). Protobuf keeps one message class per descriptor, so the
classes are the very ones TensorFlow uses: ``isinstance`` checks and ``CopyFrom`` work across.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import re
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

PREFIX = "_tfship_protos"
_TOPS = ("tensorflow", "tensorflow_serving")
_IMPORT = re.compile(r"^(from|import) (tensorflow|tensorflow_serving)([. ])", re.M)
_lock = threading.Lock()
_roots: dict[str, str | None] = {}


def _top_dir(top: str) -> str | None:
    """The directory of an installed top-level package, found without importing it."""
    if top not in _roots:
        spec = importlib.machinery.PathFinder.find_spec(top)
        locations = list(spec.submodule_search_locations or []) if spec else []
        _roots[top] = locations[0] if locations else None
    return _roots[top]


class _ProtoLoader(importlib.abc.Loader):
    def __init__(self, file: str | None) -> None:
        self.file = file  # None for a package: an empty module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        if self.file is None:
            return
        with open(self.file, encoding="utf-8") as stream:
            source = _IMPORT.sub(rf"\1 {PREFIX}.\2\3", stream.read())
        exec(compile(source, self.file, "exec"), module.__dict__)


class _ProtoFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != PREFIX and not fullname.startswith(PREFIX + "."):
            return None
        parts = fullname.split(".")[1:]
        if not parts:
            return _package_spec(fullname)
        root = _top_dir(parts[0])
        if root is None:
            return None
        location = os.path.join(root, *parts[1:])
        if os.path.isdir(location):
            return _package_spec(fullname)
        if os.path.isfile(location + ".py"):
            return importlib.machinery.ModuleSpec(fullname, _ProtoLoader(location + ".py"))
        return None


def _package_spec(fullname: str) -> importlib.machinery.ModuleSpec:
    spec = importlib.machinery.ModuleSpec(fullname, _ProtoLoader(None), is_package=True)
    spec.submodule_search_locations = []
    return spec


_finder = _ProtoFinder()


def proto_module(name: str) -> Any:
    """Import one generated proto module of TensorFlow or TF Serving, e.g.
    ``tensorflow.core.protobuf.saved_model_pb2``, without importing TensorFlow.

    Example:
        >>> proto_module("tensorflow.core.framework.types_pb2").DT_FLOAT
        1
    """
    if name.split(".")[0] not in _TOPS:
        raise ValueError(f"not a TensorFlow or TF Serving proto module: {name!r}")
    with _lock:
        if _finder not in sys.meta_path:
            sys.meta_path.append(_finder)
    return importlib.import_module(f"{PREFIX}.{name}")



def saved_model_pb2() -> Any:
    """The ``SavedModel`` proto module."""
    return proto_module("tensorflow.core.protobuf.saved_model_pb2")


def types_pb2() -> Any:
    """The ``DataType`` enum module."""
    return proto_module("tensorflow.core.framework.types_pb2")


def text_format() -> Any:
    """``google.protobuf.text_format`` (for ``saved_model.pbtxt``)."""
    from google.protobuf import text_format as module

    return module
