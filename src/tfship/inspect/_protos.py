"""TensorFlow's protocol buffer modules, without importing TensorFlow itself.

The generated ``*_pb2`` modules of TensorFlow and TF Serving only need ``google.protobuf``, but
their parent packages' ``__init__`` files import all of TensorFlow (about two seconds and 400 MB).
When TensorFlow is not imported yet, the parents are stood in for by empty packages just long
enough to import the ``_pb2`` modules, and then taken out of ``sys.modules`` again, so a later
``import tensorflow`` runs for real and finds the very same message classes (protobuf keeps one
class per descriptor).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

_TOPS = ("tensorflow", "tensorflow_serving")
_lock = threading.Lock()


class _EmptyPackageLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        # An empty package: its __init__ (which imports all of TensorFlow) is skipped on purpose.
        return None


class _EmptyPackageFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] not in _TOPS:
            return None
        directory = _package_dir(fullname, path)
        if directory is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _EmptyPackageLoader(), is_package=True)
        spec.submodule_search_locations = [directory]
        return spec


def _package_dir(fullname: str, path: Sequence[str] | None) -> str | None:
    last = fullname.rsplit(".", 1)[-1]
    search = list(path) if path is not None else list(sys.path)
    for entry in search:
        candidate = os.path.join(entry or ".", last)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    return None


def proto_module(name: str) -> Any:
    """Import one generated proto module of TensorFlow or TF Serving, e.g.
    ``tensorflow.core.protobuf.saved_model_pb2``, without running TensorFlow's ``__init__``.

    Example:
        >>> proto_module("tensorflow.core.framework.types_pb2").DT_FLOAT
        1
    """
    if name in sys.modules:
        return sys.modules[name]
    with _lock:
        if name.split(".")[0] in sys.modules:
            # The real package is already imported (or being imported): use it.
            return importlib.import_module(name)
        return _import_with_empty_parents(name)


def _import_with_empty_parents(name: str) -> Any:
    finder = _EmptyPackageFinder()
    before = set(sys.modules)
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module(name)
    finally:
        sys.meta_path.remove(finder)
        # Forget every module imported under the stand-in parents; the module objects live on
        # through the references we hold, and a real import later starts clean.
        for added in set(sys.modules) - before:
            if added.split(".")[0] in _TOPS:
                del sys.modules[added]
    _cache[name] = module
    return module


_cache: dict[str, Any] = {}


def cached_proto_module(name: str) -> Any:
    """Like :func:`proto_module`, remembering modules imported with stand-in parents."""
    if name in _cache:
        return _cache[name]
    module = proto_module(name)
    _cache[name] = module
    return module


def saved_model_pb2() -> Any:
    """The ``SavedModel`` proto module."""
    return cached_proto_module("tensorflow.core.protobuf.saved_model_pb2")


def types_pb2() -> Any:
    """The ``DataType`` enum module."""
    return cached_proto_module("tensorflow.core.framework.types_pb2")


def text_format() -> Any:
    """``google.protobuf.text_format`` (for ``saved_model.pbtxt``)."""
    from google.protobuf import text_format as module

    return module
