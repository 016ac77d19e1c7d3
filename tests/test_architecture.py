"""Every import in ``src/tfship`` keeps to the map in ARCHITECTURE.md.

The layers, the edges allowed within a layer, the narrower rules and the private modules open
to all (the foundation's, each package's door ``_shared.py``) are read from the ``layers`` block
of ARCHITECTURE.md, the one place they are written. An import inside a function or under ``if
TYPE_CHECKING:`` counts as much as one at the top. The rules: no module imports a layer above
its own (or its own layer off a listed edge); no module reaches into another package's private
module but the open ones, nor takes from another package's ``__init__`` a name its ``__all__``
does not hold; a command's module may use the private modules of the one package it drives
(``cli/serve.py reaches server/``); and no two modules of a package import each other,
directly or in a circle.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tfship"
DOC = ROOT / "ARCHITECTURE.md"


@dataclass
class Layers:
    order: list[str] = field(default_factory=list)  # top to bottom
    units: dict[str, str] = field(default_factory=dict)  # unit -> layer
    edges: set[tuple[str, str]] = field(default_factory=set)  # unit or layer -> unit or layer
    only: dict[str, set[str]] = field(default_factory=dict)  # unit -> the layers it may import
    reaches: dict[str, str] = field(default_factory=dict)  # module -> the package it drives
    # private modules anyone may import (``*._shared``: each package's door)
    open: set[str] = field(default_factory=set)


def _unit_name(entry: str) -> str:
    """``trainer/`` -> ``trainer``, ``errors.py`` -> ``errors``, ``cli/serve.py`` -> ``cli.serve``."""
    return entry.removesuffix("/").removesuffix(".py").replace("/", ".")


def parse_layers(text: str) -> Layers:
    blocks = re.findall(r"^```layers\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 1, "ARCHITECTURE.md needs exactly one ```layers block"
    layers = Layers()
    for raw in blocks[0].splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("open "):
            layers.open |= {f"tfship.{_unit_name(entry)}" for entry in line.split()[1:]}
        elif "->" in line:
            source, target = (part.strip() for part in line.split("->"))
            layers.edges.add((_unit_name(source), _unit_name(target)))
        elif " reaches " in line:
            command, package = (part.strip() for part in line.split(" reaches "))
            layers.reaches[f"tfship.{_unit_name(command)}"] = f"tfship.{_unit_name(package)}"
        elif " only " in line:
            unit, allowed = line.split(" only ")
            layers.only[_unit_name(unit.strip())] = set(allowed.split())
        else:
            name, entries = line.split(":", 1)
            layers.order.append(name.strip())
            for entry in entries.split():
                layers.units[_unit_name(entry)] = name.strip()
    for source, target in layers.edges:
        for end in (source, target):
            assert end in layers.units or end in layers.order, f"layers block: unknown {end!r}"
    for command, package in layers.reaches.items():
        assert _is_module(command) and _is_module(package), f"layers block: {command} reaches {package}"
    return layers


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: Path) -> str:
    """The package a module belongs to: ``tfship.loaders`` for ``loaders/_job.py``."""
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for each tfship module the file imports, anywhere in it."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_of(path).split(".")[: len(package_of(path).split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                child = f"{module}.{alias.name}"
                found.append((node.lineno, child if _is_module(child) else module))
    return [(line, name) for line, name in found if name == "tfship" or name.startswith("tfship.")]


def unit_of(module: str) -> str:
    """The map's unit for a module: its top package or file."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    return parts[0]


def private_reach(importer: Path, target: str, opened: set[str], drives: str | None = None) -> str | None:
    """The private module of another package that ``target`` reaches into, if it does.

    The modules ``opened`` (``tfship.*._shared`` standing for every package's door) are open to
    all. ``drives`` is the package whose command ``importer`` is, if it is one: its private
    modules are open to the command as they are to the package's own modules.
    """
    parts = target.split(".")
    own = package_of(importer)
    for index in range(1, len(parts)):
        if not parts[index].startswith("_") or parts[index].endswith("__"):
            continue
        private, package = ".".join(parts[: index + 1]), ".".join(parts[:index])
        inside = own == package or (package != "tfship" and own.startswith(package + "."))
        inside = inside or (drives is not None and (package == drives or package.startswith(drives + ".")))
        door = index == 2 and f"tfship.*.{parts[index]}" in opened
        if not inside and private not in opened and not door:
            return private
    return None


def public_names(package: str) -> set[str] | None:
    """The ``__all__`` of a package's ``__init__``, read from its source; None for a module."""
    init = SRC.joinpath(*package.split(".")[1:], "__init__.py")
    if not package.startswith("tfship.") or not init.is_file():
        return None
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return {ast.literal_eval(element) for element in node.value.elts}  # type: ignore[attr-defined]
    return set()


def withdrawn_names(path: Path) -> list[tuple[int, str]]:
    """``(line, package.name)`` for each name the file takes from another package's ``__init__``
    that its ``__all__`` does not hold (an old spelling, or a private name)."""
    own = package_of(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        public = public_names(node.module)
        if public is None or own == node.module or own.startswith(node.module + "."):
            continue
        found += [
            (node.lineno, f"{node.module}.{alias.name}")
            for alias in node.names
            if alias.name not in public and not _is_module(f"{node.module}.{alias.name}")
        ]
    return found


def package_circles(files: list[Path]) -> list[list[str]]:
    """The circles of imports among the modules of one package (its ``__init__`` aside): each a
    sorted list of the modules on it."""
    graph: dict[str, set[str]] = {}
    for path in files:
        if path.name == "__init__.py":
            continue
        name = module_name(path)
        top = ".".join(name.split(".")[:2])
        graph[name] = {
            target
            for _, target in imports(path)
            if target != name and target != top and ".".join(target.split(".")[:2]) == top
        }
    return strongly_connected(graph)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def violations(layers: Layers, files: list[Path]) -> list[str]:
    rank = {name: index for index, name in enumerate(layers.order)}  # 0 is the top
    found = []
    for path in files:
        rel = path.relative_to(SRC.parent.parent)
        source_unit = unit_of(module_name(path))
        assert source_unit in layers.units, f"{rel}: not in the layers block of ARCHITECTURE.md"
        source_layer = layers.units[source_unit]
        drives = layers.reaches.get(module_name(path))
        for line, target in imports(path):
            private = private_reach(path, target, layers.open, drives)
            if private:
                found.append(f"{rel}:{line} imports {target}: {private} is private to its package")
            target_unit = unit_of(target)
            if target_unit == source_unit:
                continue
            assert target_unit in layers.units, f"{rel}:{line}: {target} is not in the layers block"
            target_layer = layers.units[target_unit]
            if source_unit in layers.only and target_layer not in layers.only[source_unit]:
                found.append(
                    f"{rel}:{line} imports {target}: {source_unit} imports only "
                    f"{', '.join(sorted(layers.only[source_unit]))}"
                )
                continue
            below = rank[target_layer] > rank[source_layer]
            listed = {
                (source_unit, target_unit),
                (source_layer, target_layer),
                (source_unit, target_layer),
                (source_layer, target_unit),
            } & layers.edges
            if not below and not listed:
                found.append(
                    f"{rel}:{line} imports {target}: {source_unit} ({source_layer}) may not import "
                    f"{target_unit} ({target_layer})"
                )
    return found


def _layers() -> Layers:
    return parse_layers(DOC.read_text())


def test_every_module_is_on_the_map() -> None:
    layers = _layers()
    on_disk = {unit_of(module_name(path)) for path in SRC.rglob("*.py")}
    assert on_disk - set(layers.units) == set()
    assert set(layers.units) - on_disk == set()


def test_imports_keep_to_the_map() -> None:
    assert violations(_layers(), sorted(SRC.rglob("*.py"))) == []


# ``tfship export`` still takes these by their old spellings, until its command module takes
# them from ``tfship.exporters._shared`` (pyproject.toml's filterwarnings names the same three).


def test_packages_take_public_names_or_a_door() -> None:
    found = {
        f"{path.relative_to(SRC.parent)}: {name}"
        for path in sorted(SRC.rglob("*.py"))
        for _, name in withdrawn_names(path)
    }
    assert found == set()


def test_no_import_circle_inside_a_package() -> None:
    assert package_circles(sorted(SRC.rglob("*.py"))) == []


def test_the_circle_probe_can_fail() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    # an import under ``if TYPE_CHECKING:`` is an edge like any other
    assert "tfship.server._batching" in {target for _, target in imports(SRC / "server" / "_manager.py")}


def test_the_probe_can_fail() -> None:
    # without the edge that lets promote call a server, its imports of serve_client are upward
    text = DOC.read_text().replace("promote/ -> serve_client/\n", "")
    found = violations(parse_layers(text), sorted((SRC / "promote").rglob("*.py")))
    assert found and all("promote (programs) may not import serve_client" in hit for hit in found)
    opened = _layers().open
    rows = SRC / "trainer" / "_rows.py"
    assert private_reach(rows, "tfship.loaders._convert", opened) == "tfship.loaders._convert"
    assert private_reach(rows, "tfship._wire._messages", opened) == "tfship._wire._messages"
    assert private_reach(rows, "tfship._private", opened) == "tfship._private"
    assert private_reach(rows, "tfship.trainer._train", opened) is None
    assert private_reach(rows, "tfship._wire", opened) is None
    assert private_reach(rows, "tfship.records._shared", opened) is None  # a package's door
    assert private_reach(rows, "tfship.records._shared", set()) == "tfship.records._shared"
    transport = SRC / "serve_client" / "_transports" / "_grpc.py"
    assert private_reach(transport, "tfship.serve_client._base", opened) is None
    # a command uses the private modules of the package it drives, and of no other
    serve = SRC / "cli" / "serve.py"
    assert private_reach(serve, "tfship.server._config", opened, "tfship.server") is None
    assert private_reach(serve, "tfship.server._config", opened) == "tfship.server._config"
    assert private_reach(serve, "tfship.loaders._job", opened, "tfship.server") == "tfship.loaders._job"
    undriven = DOC.read_text().replace("cli/serve.py reaches server/\n", "")
    found = violations(parse_layers(undriven), [serve])
    assert found and all("is private to its package" in hit for hit in found)
