"""The code blocks of the docs and the README, and a runner that checks a console block as shown.

A block is ```` ```console ```` (commands after ``$ ``, each followed by what it prints) or
```` ```python ````. One that cannot run in the tests (a cluster, a real run's timings and
version numbers) says why in a comment on the line above it: ``<!-- illustrative: why -->``.
A console block runs in a fresh directory, command after command, each in ``bash`` with
``tfship`` meaning this checkout's; what a command prints (stdout and stderr together) is compared
with the lines under it as doctest compares them, ``...`` standing for any text; under
``<!-- numbers vary -->`` every number shown stands for any number too (a real run's timings and
probabilities).
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import tfship

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
_ILLUSTRATIVE = re.compile(r"<!-- illustrative: (.+?) -->\s*$")
# above a block that runs: its numbers (timings, probabilities, counts) are those of one real run
_NUMBERS_VARY = "<!-- numbers vary -->"
_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    kind: str
    code: str
    why_not_run: str | None
    numbers_vary: bool = False


def pages() -> list[Path]:
    """Every page that holds examples: the README and the docs' Markdown."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path, kind: str | None = None) -> list[Block]:
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        if match.group(1) not in ("console", "python"):
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = _ILLUSTRATIVE.search(before)
        line = text.count("\n", 0, match.start()) + 1
        rel = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name
        why = reason.group(1) if reason else None
        found.append(Block(rel, line, match.group(1), match.group(2), why, before.strip() == _NUMBERS_VARY))
    return [b for b in found if kind is None or b.kind == kind]


def runnable(page: Path, kind: str | None = None) -> list[Block]:
    return [b for b in blocks(page, kind) if b.why_not_run is None]


@dataclass(frozen=True)
class Command:
    line: str
    shown: list[str]


def commands(block: Block) -> list[Command]:
    found: list[Command] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            found.append(Command(line[2:], []))
        else:
            assert found, f"{block.page}:{block.line}: output before the first command"
            found[-1].shown.append(line)
    return found


def environment() -> dict[str, str]:
    """This environment, with the tfship of these tests first on the path and Python unbuffered,
    so that a command's stdout and stderr interleave as a terminal shows them."""
    source = str(Path(tfship.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1", TFSHIP_PYTHON=sys.executable)


def run_console(block: Block, cwd: Path, timeout: float = 600) -> None:
    """Run every command of ``block`` in ``cwd`` and fail, naming the line, where one does not
    print what the block shows or fails where the block shows no failure."""
    env = environment()
    listed = commands(block)
    status = 0
    checker = doctest.OutputChecker()
    for index, command in enumerate(listed):
        script = f'tfship() {{ "$TFSHIP_PYTHON" -m tfship "$@"; }}\n(exit {status})\n{command.line}\n'
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            # apart when numbers vary: a real run's two streams may interleave either way
            stderr=subprocess.PIPE if block.numbers_vary else subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        status = done.returncode
        printed = done.stdout + (done.stderr or "")
        want = "".join(line + "\n" for line in command.shown)
        where = f"{block.page}:{block.line}: $ {command.line}"
        if block.numbers_vary:
            matches = _interleaves(command.shown, done.stdout.splitlines(), done.stderr.splitlines())
        else:
            matches = checker.check_output(want, done.stdout, doctest.ELLIPSIS)
        assert matches, f"{where}\n--- shown\n{want}--- printed\n{printed}"
        shows_failure = any(line.startswith("Error:") for line in command.shown)
        checked_next = index + 1 < len(listed) and listed[index + 1].line == "echo $?"
        assert status == 0 or shows_failure or checked_next, f"{where}: exit {status}\n{printed}"


def _loose(shown: str) -> str:
    """A pattern of ``shown`` in which every number stands for any number and ``...`` for any text."""
    pattern = []
    at = 0
    for match in re.finditer(rf"\.\.\.|{_NUMBER}", shown):
        pattern.append(re.escape(shown[at : match.start()]))
        pattern.append(".*?" if match.group() == "..." else _NUMBER)
        at = match.end()
    pattern.append(re.escape(shown[at:]))
    return "".join(pattern)


def _interleaves(shown: list[str], out: list[str], err: list[str]) -> bool:
    """Whether the lines shown are the lines of stdout and of stderr, each stream in its order,
    interleaved in some way, a shown line matching a printed one by :func:`_loose`."""
    patterns = [re.compile(_loose(line)) for line in shown]
    if len(shown) != len(out) + len(err):
        return False
    reachable = {(0, 0)}  # lines of stdout and of stderr matched so far
    for pattern in patterns:
        reachable = {
            step
            for j, k in reachable
            for step, line in (
                ((j + 1, k), out[j] if j < len(out) else None),
                ((j, k + 1), err[k] if k < len(err) else None),
            )
            if line is not None and pattern.fullmatch(line)
        }
    return (len(out), len(err)) in reachable
