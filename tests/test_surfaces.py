"""Every package shows one public surface: a sorted ``__all__`` that is exactly what it exports."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

PACKAGES = [
    "tfship",
    "tfship.errors",
    "tfship.schema",
    "tfship.data",
    "tfship.records",
    "tfship.trainer",
    "tfship.exporters",
    "tfship.inspect",
    "tfship.loaders",
    "tfship.serve_client",
    "tfship.server",
    "tfship.promote",
]
# Their surfaces hold what needs tf.estimator: the estimator lane only (tests/estimator_lane.py).
_ESTIMATOR = ("tfship.trainer", "tfship.exporters")
SURFACES = [pytest.param(p, marks=[pytest.mark.estimator] if p in _ESTIMATOR else []) for p in PACKAGES]


@pytest.mark.parametrize("name", SURFACES)
def test_all_is_sorted_resolvable_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    assert len(set(exported)) == len(exported)
    for public in exported:
        assert getattr(module, public) is not None
    # every public class or function defined in the package is in __all__ (what it imports
    # from elsewhere for its own use is not its surface)
    held = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and isinstance(value, (type, types.FunctionType))
        and (value.__module__ == name or value.__module__.startswith(name + "."))
    }
    assert held <= set(exported), held - set(exported)


@pytest.mark.parametrize("name", SURFACES)
def test_names_come_from_the_package(name: str) -> None:
    # an exported class or function is defined in this package, never borrowed from another
    module = importlib.import_module(name)
    for public in module.__all__:
        value = getattr(module, public)
        home = getattr(value, "__module__", None)
        if home is not None and isinstance(value, (type, types.FunctionType)):
            # its own modules, or the private foundation it re-exports (``tfship._wire``)
            assert home == name or home.startswith((name + ".", "tfship._")), f"{name}.{public}: {home}"


def test_no_package_imports_tensorflow() -> None:
    # where TensorFlow has no tf.estimator, importing the trainer fails in one line, before
    # importing TensorFlow too
    imports = "".join(f"try:\n    import {p}\nexcept ExtraNotInstalledError:\n    pass\n" for p in PACKAGES)
    code = "import sys\nfrom tfship.errors import ExtraNotInstalledError\n" + imports
    code += "print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# The foundation's own unit tests may reach inside it, and so may the tests that craft hostile
# files from the wire's messages or probe a limit no public name shows; every other test uses
# public names.
_MAY_IMPORT_PRIVATE = (
    "wire/",
    "test_imports.py",
    "test_files.py",
    "test_install_command.py",
    "inspect/test_hostile.py",
    "server/test_server_limits.py",
    "serve_client/test_http_pool.py",
)


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        private = [name for name in names if _is_private(name)]
        if private:  # one hit per statement: the first private name it reaches
            found.append(f"{path.name}:{node.lineno} {private[0]}")
    return found


def _is_private(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tfship" and any(
        part.startswith("_") and not part.endswith("__")
        for part in parts[1:]  # dunders are public
    )


def test_tests_import_public_names_only() -> None:
    root = Path(__file__).parent
    offenders = [
        hit
        for path in sorted(root.rglob("*.py"))
        if not str(path.relative_to(root)).startswith(_MAY_IMPORT_PRIVATE)
        for hit in _private_imports(path)
    ]
    assert offenders == []


def test_the_private_import_probe_can_fail(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from tfship._wire import protos\nimport tfship.loaders._job\nfrom tfship import _tf\n"
        "from tfship import __version__\n"
    )
    assert [hit.split()[1] for hit in _private_imports(probe)] == [
        "tfship._wire",
        "tfship.loaders._job",
        "tfship._tf",
    ]
