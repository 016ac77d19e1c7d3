"""Every package shows one public surface: a sorted ``__all__`` that is exactly what it exports."""

from __future__ import annotations

import ast
import importlib
import re
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


@pytest.mark.parametrize("name", SURFACES)
def test_every_public_name_is_documented(name: str) -> None:
    # what the docs show of a package comes from its docstrings: a class or function has its
    # own (not a base class's, nor the one a dataclass makes up), a constant a string after
    # its assignment or a ``#:`` comment before it
    module = importlib.import_module(name)
    undocumented = [
        public for public in module.__all__ if not _documented(getattr(module, public), public, name)
    ]
    assert undocumented == []


def _documented(value: object, public: str, package: str = "tfship") -> bool:
    if isinstance(value, (type, types.FunctionType)):
        doc = value.__doc__
        inherited = isinstance(value, type) and any(doc is base.__doc__ for base in value.__mro__[1:])
        made_up = doc is not None and doc.startswith(f"{public}(")  # a dataclass's signature
        return bool(doc and doc.strip()) and not inherited and not made_up
    return any(_constant_documented(path, public) for path in _assigning(package, value, public))


def _assigning(package: str, value: object, public: str) -> list[Path]:
    """The source files that may define a public constant of ``package`` (its own modules, the
    foundation's private ones it re-exports) whose top level assigns ``public`` the very ``value``."""
    src = Path(importlib.import_module("tfship").__file__ or "").parent
    own = src.joinpath(*package.split(".")[1:])
    if package == "tfship":
        places = [src / "__init__.py"]
    else:
        places = sorted(own.rglob("*.py")) if own.is_dir() else [own.with_suffix(".py")]
    places += sorted(src.glob("_*.py")) + sorted((src / "_wire").glob("*.py"))
    found = []
    for path in places:
        if public not in path.read_text():
            continue
        module_name = ".".join(path.relative_to(src.parent).with_suffix("").parts).removesuffix(".__init__")
        if getattr(importlib.import_module(module_name), public, None) is value:
            found.append(path)
    return found


def _constant_documented(path: Path, public: str) -> bool:
    lines = path.read_text().splitlines()
    body = ast.parse("\n".join(lines)).body
    for index, node in enumerate(body):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if not any(isinstance(target, ast.Name) and target.id == public for target in targets):
            continue
        after = body[index + 1] if index + 1 < len(body) else None
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            return True
        return node.lineno > 1 and lines[node.lineno - 2].lstrip().startswith("#:")
    return False


def test_the_documentation_probe_can_fail(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text('#: documented\nA = 1\nB = 2\nC = 3\n"""documented too"""\n')
    assert [_constant_documented(source, name) for name in "ABC"] == [True, False, True]

    class Bare:
        pass

    class Child(ValueError):
        pass

    assert not _documented(Bare, "Bare") and not _documented(Child, "Child")


@pytest.mark.parametrize("name", SURFACES)
def test_old_spellings_still_import_and_warn(name: str) -> None:
    # a name that left the surface, or was renamed, keeps working for now and says what to write
    module = importlib.import_module(name)
    old = getattr(module, "_OLD", None)
    renamed, withdrawn = (old.renamed, old.withdrawn) if old else ({}, {})
    for spelling in sorted({**renamed, **withdrawn}):
        assert spelling not in module.__all__ and spelling not in vars(module)
        with pytest.warns(DeprecationWarning, match=rf"^{re.escape(name)}\.{spelling} is deprecated: "):
            value = getattr(module, spelling)
        where = renamed.get(spelling) or withdrawn[spelling]
        home, _, attribute = where.rpartition(".")
        assert value is getattr(importlib.import_module(home), attribute)


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


# What one tfship package needs of another goes through that package's one private door
# (ARCHITECTURE.md): a test of that plumbing imports it there, and nowhere else private.
_DOOR = "_shared"


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
        if isinstance(node, ast.ImportFrom) and node.level == 0 and not private:
            private = [
                f"{node.module}.{alias.name}" for alias in node.names if _withdrawn(node.module, alias.name)
            ]
        if private:  # one hit per statement: the first private name it reaches
            found.append(f"{path.name}:{node.lineno} {private[0]}")
    return found


def _withdrawn(module: str | None, name: str) -> bool:
    """Whether ``from module import name`` takes from a tfship package a name its ``__all__``
    does not hold (an old spelling, served with a DeprecationWarning, or plumbing)."""
    if not module or not module.startswith("tfship"):
        return False
    src = Path(importlib.import_module("tfship").__file__ or "").parent
    init = src.joinpath(*module.split(".")[1:], "__init__.py")
    if not init.is_file() or init.with_name(name + ".py").is_file() or init.with_name(name).is_dir():
        return False
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            getattr(target, "id", "") == "__all__" for target in node.targets
        ):
            return name not in ast.literal_eval(node.value)
    return False


def _is_private(name: str) -> bool:
    parts = name.split(".")
    if parts[0] == "tfship" and len(parts) >= 3 and parts[2] == _DOOR:
        parts = parts[:2] + parts[3:]  # a package's door, where a test tests its plumbing
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
        "from tfship import __version__\nfrom tfship.records._shared import convert_chunk\n"
        "from tfship.records._shared._x import y\nfrom tfship.records import convert_chunk, to_example\n"
    )
    assert [hit.split()[1] for hit in _private_imports(probe)] == [
        "tfship._wire",
        "tfship.loaders._job",
        "tfship._tf",
        "tfship.records._shared._x",
        "tfship.records.convert_chunk",
    ]
