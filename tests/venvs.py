"""Pythons of other versions on this machine, and the ``.venv-core-*`` venvs the tests build
with them: venvs without TensorFlow, kept in the project (git-ignored, removed by ``make
clean``) so that only their first run downloads packages.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PYTHON") and "proxy" not in key.lower()
    }
    env.update(extra)
    return env


PROTOBUFS = {"6": "protobuf>=6,<7", "3.20": "protobuf==3.20.3"}
PYTHONS = interpreters(("3.12", "3.13"))
NEWEST = next(minor for minor in ("3.13", "3.12", THIS) if minor in PYTHONS)


@contextmanager
def building(venv: Path) -> Iterator[None]:
    """Held while ``venv`` is checked and built: the two lanes of ``make test`` run side by side
    and may both ask for the same venv; the second waits and then finds it built."""
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _source_stamp(requirements: list[str]) -> str:
    """What the venv holds: the requirements and a hash of the package's sources."""
    digest = hashlib.sha256()
    for path in sorted([ROOT / "pyproject.toml", *(ROOT / "src").rglob("*")]):
        if path.is_file() and "__pycache__" not in path.parts and ".egg-info" not in str(path):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return " ".join([*requirements, digest.hexdigest()])


def core_venv(protobuf: str) -> Path:
    """A venv holding ``pip install <checkout> <protobuf>``, reinstalled when the sources change."""
    command, env = PYTHONS[NEWEST]
    venv = ROOT / f".venv-core-py{NEWEST}-install-protobuf{protobuf}"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = _source_stamp([PROTOBUFS[protobuf]])
    with building(venv):
        if stamp.is_file() and stamp.read_text() == wanted:
            return venv
        if not python.is_file():
            subprocess.run(command + ["-m", "venv", str(venv)], env=env, check=True, timeout=300)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        with tempfile.TemporaryDirectory() as tmp:
            checkout = package_copy(Path(tmp))
            for args in (
                [str(checkout), PROTOBUFS[protobuf]],
                ["--force-reinstall", "--no-deps", str(checkout)],
            ):
                done = subprocess.run(
                    pip + args, env=clean_env(), capture_output=True, text=True, timeout=900
                )
                assert done.returncode == 0, done.stderr
        stamp.write_text(wanted)
    return venv


# The Open Inference Protocol's clients: tritonclient needs protobuf 6.30 or later, which TF 2.15's
# stack cannot hold, and kserve's SDK brings a server's dependencies (fastapi, uvicorn), so they
# live in a venv of their own and the tests run them as a process.
V2_CLIENTS = ["tritonclient[http,grpc]==2.73.0", "kserve==0.21.0", "aiohttp", "ml_dtypes"]


def v2_clients_venv() -> Path:
    """A venv holding tritonclient's HTTP and gRPC clients (blocking and asyncio) and the kserve
    SDK's inference clients, built once."""
    command, env = PYTHONS[NEWEST]
    venv = ROOT / ".venv-v2-clients"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = " ".join(V2_CLIENTS)
    with building(venv):
        if stamp.is_file() and stamp.read_text() == wanted:
            return venv
        if not python.is_file():
            subprocess.run(command + ["-m", "venv", str(venv)], env=env, check=True, timeout=300)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *V2_CLIENTS]
        done = subprocess.run(pip, env=clean_env(), capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr
        stamp.write_text(wanted)
    return venv
