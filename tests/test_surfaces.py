"""Every package shows one public surface: a sorted ``__all__`` that is exactly what it exports."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

PACKAGES = [
    "tfship", "tfship.errors", "tfship.schema", "tfship.data", "tfship.trainer", "tfship.exporters",
    "tfship.inspect", "tfship.loaders", "tfship.serve_client", "tfship.server",
]


@pytest.mark.parametrize("name", PACKAGES)
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
        key for key, value in vars(module).items()
        if not key.startswith("_") and isinstance(value, (type, types.FunctionType))
        and (value.__module__ == name or value.__module__.startswith(name + "."))
    }
    assert held <= set(exported), held - set(exported)


@pytest.mark.parametrize("name", PACKAGES)
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
    code = "import sys\n" + "".join(f"import {p}\n" for p in PACKAGES) + "print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
