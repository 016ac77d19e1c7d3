"""Only ``tfship/_tf.py`` imports TensorFlow, TF Serving's API, the Estimator or Keras.

Every other module reads and writes messages through tfship's own classes (``tfship._wire``)
and reaches TensorFlow through ``_tf.py``, so the client, the inspector and the wire formats
install and run without TensorFlow. An import inside a function counts as much as one at the
top, and so does ``importlib.import_module("tensorflow...")``.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tfship"
GATE = SRC / "_tf.py"
TOPS = ("tensorflow", "tensorflow_serving", "tensorflow_estimator", "keras", "tf_keras")


def _named(module: str) -> bool:
    return module.split(".")[0] in TOPS


def tensorflow_imports(source: str, filename: str) -> list[str]:
    """``line: what`` for each import of TensorFlow's packages in one module's source."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        if names:
            assert isinstance(node, ast.stmt | ast.expr)  # an import statement or a call
            found += [(node.lineno, name) for name in names if _named(name)]
    return [f"{line}: {name}" for line, name in sorted(found)]


def test_only_the_gate_imports_tensorflow() -> None:
    modules = sorted(SRC.rglob("*.py"))
    assert GATE in modules and len(modules) > 50
    offenders = {
        str(path.relative_to(SRC)): hits
        for path in modules
        if path != GATE
        for hits in [tensorflow_imports(path.read_text(encoding="utf-8"), str(path))]
        if hits
    }
    assert offenders == {}, f"import TensorFlow only through tfship._tf: {offenders}"


def test_the_gate_itself_is_seen_importing_tensorflow() -> None:
    # The walk must be able to fail: it finds _tf.py's own imports.
    hits = tensorflow_imports(GATE.read_text(encoding="utf-8"), str(GATE))
    assert any(hit.endswith(": tensorflow") for hit in hits)
    assert any(hit.endswith(": tensorflow_estimator") for hit in hits)


def test_every_kind_of_import_is_caught() -> None:
    source = (
        "import os\n"
        "import tensorflow as tf\n"
        "def f():\n"
        "    from tensorflow_serving.apis import predict_pb2\n"
        "    import keras.layers\n"
        "    return importlib.import_module('tensorflow.core.protobuf.config_pb2')\n"
        "from . import tensorflow_like\n"
        "from tfship._tf import tf\n"
    )
    assert tensorflow_imports(source, "probe.py") == [
        "2: tensorflow",
        "4: tensorflow_serving.apis",
        "5: keras.layers",
        "6: tensorflow.core.protobuf.config_pb2",
    ]
