"""Every import in ``src/tfship`` keeps to the map in ARCHITECTURE.md.

The layers, the edges allowed within a layer and the narrower rules are read from the
``layers`` block of ARCHITECTURE.md, the one place they are written. An import inside a
function counts as much as one at the top. Two rules: no module imports a layer above its own
(or its own layer off a listed edge), and no module reaches into another package's private
module; the foundation's private modules are its public surface, and a command's module may
use the private modules of the one package it drives (``cli/serve.py reaches server/``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tfship"
DOC = ROOT / "ARCHITECTURE.md"
OPEN_FOUNDATION = ("tfship._wire", "tfship._tf", "tfship._files", "tfship._output", "tfship._interrupt")


@dataclass
class Layers:
    order: list[str] = field(default_factory=list)  # top to bottom
    units: dict[str, str] = field(default_factory=dict)  # unit -> layer
    edges: set[tuple[str, str]] = field(default_factory=set)  # unit or layer -> unit or layer
    only: dict[str, set[str]] = field(default_factory=dict)  # unit -> the layers it may import
    reaches: dict[str, str] = field(default_factory=dict)  # module -> the package it drives


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
        if "->" in line:
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


def private_reach(importer: Path, target: str, drives: str | None = None) -> str | None:
    """The private module of another package that ``target`` reaches into, if it does.

    ``drives`` is the package whose command ``importer`` is, if it is one: its private
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
        if not inside and private not in OPEN_FOUNDATION:
            return private
    return None


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
            private = private_reach(path, target, drives)
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


def test_the_probe_can_fail() -> None:
    # without the edge that lets promote call a server, its imports of serve_client are upward
    text = DOC.read_text().replace("promote/ -> serve_client/\n", "")
    found = violations(parse_layers(text), sorted((SRC / "promote").rglob("*.py")))
    assert found and all("promote (programs) may not import serve_client" in hit for hit in found)
    rows = SRC / "trainer" / "_rows.py"
    assert private_reach(rows, "tfship.loaders._convert") == "tfship.loaders._convert"
    assert private_reach(rows, "tfship._wire._messages") == "tfship._wire._messages"
    assert private_reach(rows, "tfship._private") == "tfship._private"
    assert private_reach(rows, "tfship.trainer._train") is None
    assert private_reach(rows, "tfship._wire") is None
    transport = SRC / "serve_client" / "_transports" / "_grpc.py"
    assert private_reach(transport, "tfship.serve_client._base") is None
    # a command uses the private modules of the package it drives, and of no other
    serve = SRC / "cli" / "serve.py"
    assert private_reach(serve, "tfship.server._config", "tfship.server") is None
    assert private_reach(serve, "tfship.server._config") == "tfship.server._config"
    assert private_reach(serve, "tfship.loaders._job", "tfship.server") == "tfship.loaders._job"
    undriven = DOC.read_text().replace("cli/serve.py reaches server/\n", "")
    found = violations(parse_layers(undriven), [serve])
    assert found and all("is private to its package" in hit for hit in found)
