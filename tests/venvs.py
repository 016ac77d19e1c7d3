"""Pythons of other versions on this machine, and the ``.venv-core-*`` venvs the tests build
with them: venvs without TensorFlow, kept in the project (git-ignored, removed by ``make
clean``) so that only their first run downloads packages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THIS = "{}.{}".format(*sys.version_info[:2])


def _runs(command: list[str], env: dict[str, str] | None = None) -> bool:
    try:
        done = subprocess.run(command + ["-c", "pass"], env=env, capture_output=True, timeout=60)
        return done.returncode == 0
    except OSError:
        return False


Interpreter = tuple[list[str], dict[str, str]]  # a command and the environment it runs in


def interpreters(minors: tuple[str, ...] = ("3.9", "3.12", "3.13")) -> dict[str, Interpreter]:
    """This Python, and Pythons of ``minors`` where they are installed (on PATH or by pyenv)."""
    found: dict[str, Interpreter] = {THIS: ([sys.executable], dict(os.environ))}
    pyenv = shutil.which("pyenv")
    bare = ""
    if pyenv:
        bare = subprocess.run([pyenv, "versions", "--bare"], capture_output=True, text=True).stdout
    for minor in minors:
        if minor in found:
            continue
        if shutil.which(f"python{minor}") and _runs([f"python{minor}"]):
            found[minor] = ([f"python{minor}"], dict(os.environ))
            continue
        versions = [v for v in bare.split() if re.fullmatch(rf"{re.escape(minor)}\.\d+", v)]
        if versions:
            env = dict(os.environ, PYENV_VERSION=versions[-1])
            if _runs([f"python{minor}"], env):
                found[minor] = ([f"python{minor}"], env)
    return found


def package_copy(into: Path) -> Path:
    """The checkout's package files (sources, ``pyproject.toml``, README) copied under ``into``,
    for ``pip install``: building there leaves nothing in the checkout, and a ``build/`` left in
    the checkout never adds stale modules to the install."""
    checkout = into / "tfship"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", checkout / "src", ignore=skip)
    for path in [ROOT / "pyproject.toml", ROOT / "README.md", *ROOT.glob("LICEN[CS]E*")]:
        shutil.copy(path, checkout)
    return checkout


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without ``PYTHON*`` variables (``PYTHONPATH=src`` would put
    the checkout before a venv's own packages) and without proxies, plus ``extra``."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("PYTHON") and "proxy" not in key.lower()}
    env.update(extra)
    return env
