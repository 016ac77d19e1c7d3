"""Count the annotations in ``src/tfship`` that mention ``Any``, in total and per package.

Not a test (pytest collects ``test_*.py`` only): a measuring stick for how much of the code the
type checker cannot see into. Run it from the repository's root::

    python tests/any_count.py            # a table, per package and total
    python tests/any_count.py --list     # and every annotation, one a line

An annotation is a parameter's, a return's, or a variable's (``x: T = ...``); it counts once
however many times it names ``Any`` (``dict[str, Any]``, ``typing.Any``, ``"Any"`` in quotes).
The ``bare`` column counts those that are ``Any`` itself, the values the checker knows nothing of.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "tfship"


def _is_bare_any(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip() in ("Any", "typing.Any")
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
    )


def _mentions_any(node: ast.expr | None) -> bool:
    if node is None:
        return False
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and part.id == "Any":
            return True
        if isinstance(part, ast.Attribute) and part.attr == "Any":
            return True
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            try:
                inner = ast.parse(part.value, mode="eval").body
            except SyntaxError:
                continue
            if _mentions_any(inner):
                return True
    return False


def _annotations(tree: ast.AST) -> Iterator[tuple[int, ast.expr | None]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            every += [arg for arg in (args.vararg, args.kwarg) if arg is not None]
            for arg in every:
                yield arg.lineno, arg.annotation
            yield node.lineno, node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.lineno, node.annotation


def package(path: Path) -> str:
    """``serve_client`` for ``serve_client/_base.py``; the module's name for a top-level one."""
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def count(root: Path = SRC) -> tuple[Counter[str], Counter[str], list[str]]:
    """Annotations mentioning ``Any`` per package, those that are ``Any`` itself, each as ``path:line``."""
    per: Counter[str] = Counter()
    bare: Counter[str] = Counter()
    hits: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for line, annotation in _annotations(tree):
            if _mentions_any(annotation):
                per[package(path)] += 1
                bare[package(path)] += _is_bare_any(annotation)
                mark = " (Any)" if _is_bare_any(annotation) else ""
                hits.append(f"{path.relative_to(root.parent)}:{line}{mark}")
    return per, bare, hits


def main(argv: list[str]) -> int:
    per, bare, hits = count()
    if "--list" in argv:
        print("\n".join(hits))
    print(f"{'package':<16} {'mention':>7} {'bare':>5}")
    for name, number in sorted(per.items(), key=lambda item: (-item[1], item[0])):
        print(f"{name:<16} {number:>7} {bare[name]:>5}")
    print(f"{'total':<16} {sum(per.values()):>7} {sum(bare.values()):>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
