"""The ops each TensorFlow runs, as tables shipped with tfship, so ``inspect check`` needs no TensorFlow.

One table per TensorFlow that tfship's extras install, ``opdefs-<version>.json`` (package data
of ``tfship.inspect``): 2.15.1, pinned by the ``estimator`` extra, and the newest, which the
``run`` extra brings. A table holds what the readiness checks consult and nothing more: the
TensorFlow version it describes, every op type that version registers with the names of its
attributes (no types, defaults or arguments: no check reads them), the newest
``XlaCallModule`` version it runs, and the newest StableHLO portable artifact version it
deserializes (what a JAX export's ``XlaCallModule`` carries; ``null`` when the TensorFlow does
not say). ``make opdefs`` writes each from its own lane's TensorFlow
(``python -m tfship.inspect._opdefs_gen DIRECTORY``); a test fails while the installed one's
table is stale.

A model is judged against the TensorFlow that will run it (:func:`op_table`): the one named
as the target; else the one installed here, found by its metadata without importing it; else,
with no TensorFlow installed, the newest table shipped. An installed TensorFlow that tfship has
no table for (a release newer than tfship, a nightly) gets one built from its own op registry
by a child process, once, and kept in tfship's cache directory: judging it by another
version's table would pass ops it cannot run, or refuse ones it can.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfship._files import write_atomically
from tfship._tf import tensorflow_version
from tfship.errors import InputError, TfshipError

log = logging.getLogger(__name__)

SCHEMA = "tfship.opdefs"
SCHEMA_VERSION = 2
HOLDS = (
    "every op type the TensorFlow named here registers, with the names of its attributes; "
    "the newest XlaCallModule version it runs; the newest StableHLO portable artifact version "
    "it deserializes (null: unknown)"
)
#: Where a table built from an installed TensorFlow is kept (else ``$XDG_CACHE_HOME/tfship``).
CACHE_ENV = "TFSHIP_CACHE_DIR"
_TABLE_NAME = re.compile(r"^opdefs-(\d+\.\d+\.\d+)\.json$")
_TARGET = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_STABLEHLO_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
#: Why a table was chosen: named by the caller, the TensorFlow installed here, or the newest shipped.
TARGET, INSTALLED, NEWEST = "target", "installed", "newest"


def table_file(version: str) -> str:
    """The file name of TensorFlow ``version``'s table.

    Example:
        >>> table_file("2.15.1")
        'opdefs-2.15.1.json'
    """
    return f"opdefs-{version}.json"


@dataclass(frozen=True)
class OpTable:
    """The op types a TensorFlow registers, with their attribute names, and why it was chosen.

    ``chosen`` is ``"target"`` (named by the caller), ``"installed"`` (the TensorFlow installed
    here) or ``"newest"`` (no TensorFlow installed: the newest table shipped); ``built`` is where
    a table built from the installed TensorFlow's registry is kept, ``None`` for a shipped one.
    ``stablehlo_max_version`` is the newest StableHLO version its ``XlaCallModule`` deserializes
    (``"1.13.7"``), ``None`` when the table does not know it.

    Example:
        >>> table = op_table("2.15")
        >>> table.tensorflow, sorted(table.attributes("MatMul"))
        ('2.15.1', ['T', 'transpose_a', 'transpose_b'])
        >>> table.attributes("TfshipNoSuchOp") is None
        True
        >>> table.judged
        'TensorFlow 2.15.1, the target named'
        >>> table.xla_call_module_max_version, table.stablehlo_max_version
        (8, '0.14.24')
    """

    tensorflow: str
    xla_call_module_max_version: int
    stablehlo_max_version: str | None
    ops: Mapping[str, frozenset[str]]
    chosen: str = TARGET
    built: str | None = None

    def attributes(self, op: str) -> frozenset[str] | None:
        """The attribute names of a registered op type, or ``None`` when it is not registered."""
        return self.ops.get(op)

    @property
    def name(self) -> str:
        """How findings name this TensorFlow: ``this TensorFlow (2.15.1)`` when it is the one
        installed here, else ``TensorFlow 2.15.1``."""
        if self.chosen == INSTALLED:
            return f"this TensorFlow ({self.tensorflow})"
        return f"TensorFlow {self.tensorflow}"

    @property
    def judged(self) -> str:
        """Which TensorFlow this is and why it was chosen, in a phrase."""
        why = {
            TARGET: "the target named",
            INSTALLED: "the one installed here",
            NEWEST: "the newest tfship has a table for (no TensorFlow is installed here)",
        }[self.chosen]
        if self.built is not None:
            why += f" (tfship ships no table for it: built from its op registry, kept in {self.built})"
        return f"TensorFlow {self.tensorflow}, {why}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


@functools.lru_cache(maxsize=1)
def shipped_tensorflows() -> tuple[str, ...]:
    """The TensorFlow versions tfship ships a table for, oldest first.

    Example:
        >>> shipped_tensorflows()
        ('2.15.1', '2.21.0')
    """
    found = []
    for entry in importlib.resources.files("tfship.inspect").iterdir():
        match = _TABLE_NAME.match(entry.name)
        if match:
            found.append(match.group(1))
    return tuple(sorted(found, key=_version_key))


def resolve_target(target: str) -> str:
    """The version of the table that judges for ``target``: a shipped version (``2.15.1``), or
    its major.minor (``2.15``, the newest shipped of that series), or the installed version.

    Raises:
        InputError: tfship has no table for ``target``; the message lists those it has.

    Example:
        >>> resolve_target("2.15"), resolve_target("2.21.0")
        ('2.15.1', '2.21.0')
    """
    known = list(shipped_tensorflows())
    installed = tensorflow_version()
    if installed is not None and installed not in known:
        known.append(installed)
    match = _TARGET.match(target.strip())
    if match is not None:
        if match.group(3) is not None:
            chosen = [v for v in known if v == target.strip()]
        else:
            series = (int(match.group(1)), int(match.group(2)))
            chosen = [v for v in known if _version_key(v)[:2] == series]
        if chosen:
            return max(chosen, key=_version_key)
    listed = ", ".join(shipped_tensorflows()) or "none"
    if installed is not None and installed not in shipped_tensorflows():
        listed += f" (and {installed}, the one installed here)"
    raise InputError(
        f"no op table for the target TensorFlow {target!r}: tfship has tables for TensorFlow "
        f"{listed}; give one, or its major.minor such as 2.15"
    )


def op_table(target: str | None = None) -> OpTable:
    """The table that judges a model: ``target``'s, else the installed TensorFlow's, else the
    newest shipped. The installed TensorFlow is found by its metadata, never imported; when
    tfship ships no table for it, one is built from its op registry by a child process, once.

    Raises:
        InputError: tfship has no table for ``target``.
        TfshipError: a shipped table is missing or unreadable, or the installed TensorFlow has
            no shipped table and building one failed.

    Example:
        >>> import tensorflow as tf
        >>> table = op_table()
        >>> table.tensorflow == tf.__version__, table.chosen
        (True, 'installed')
    """
    if target is not None:
        version = resolve_target(target)
        table = _table(version, installed=version == tensorflow_version())
        return dataclasses.replace(table, chosen=TARGET)
    installed = tensorflow_version()
    if installed is not None:
        return dataclasses.replace(_table(installed, installed=True), chosen=INSTALLED)
    shipped = shipped_tensorflows()
    if not shipped:
        raise TfshipError("tfship's op tables (opdefs-*.json in tfship.inspect) are missing: reinstall it")
    return dataclasses.replace(_table(shipped[-1], installed=False), chosen=NEWEST)


@functools.cache
def _table(version: str, *, installed: bool) -> OpTable:
    if version in shipped_tensorflows() or not installed:
        return _shipped_table(version)
    return _built_table(version)


def _shipped_table(version: str) -> OpTable:
    name = table_file(version)
    where = f"tfship's op table for TensorFlow {version} ({name} in tfship.inspect)"
    try:
        text = importlib.resources.files("tfship.inspect").joinpath(name).read_bytes()
    except OSError as exc:
        raise TfshipError(f"{where} is missing: reinstall tfship") from exc
    return _parse(text, where, version, remedy="reinstall tfship")


def _parse(text: bytes, where: str, version: str, *, remedy: str, built: str | None = None) -> OpTable:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TfshipError(f"{where} is not valid JSON ({exc}): {remedy}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("version") != SCHEMA_VERSION:
        raise TfshipError(f"{where} is not a {SCHEMA} table version {SCHEMA_VERSION}: {remedy}")
    if _same_version(data.get("tensorflow")) != _same_version(version):  # a nightly: 2.22.0-dev2025...
        raise TfshipError(f"{where} describes TensorFlow {data.get('tensorflow')}, not {version}: {remedy}")
    stablehlo = data.get("stablehlo_max_version", "missing")
    if stablehlo is not None and not (isinstance(stablehlo, str) and _STABLEHLO_VERSION.match(stablehlo)):
        raise TfshipError(f"{where} gives {stablehlo!r} as its newest StableHLO, not X.Y.Z or null: {remedy}")
    return OpTable(
        tensorflow=version,
        xla_call_module_max_version=int(data["xla_call_module_max_version"]),
        stablehlo_max_version=stablehlo,
        ops={op: frozenset(attrs) for op, attrs in data["ops"].items()},
        built=built,
    )


def _same_version(version: object) -> str:
    return re.sub(r"[-_]", ".", str(version))


def cache_dir() -> Path:
    """Where tables built from an installed TensorFlow are kept: ``$TFSHIP_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/tfship``, else ``~/.cache/tfship``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tfship"


def _built_table(version: str) -> OpTable:
    """The installed TensorFlow's table from the cache, else built by a child process and kept."""
    cached = cache_dir() / table_file(version)
    where = f"the op table built from TensorFlow {version} ({cached})"
    try:
        return _parse(cached.read_bytes(), where, version, remedy="delete it", built=str(cached))
    except OSError:
        pass
    except TfshipError as exc:
        log.warning("%s; building it again", exc)
    text = _build_from_registry(version, cached)
    table = _parse(
        text,
        f"the op table built from TensorFlow {version}",
        version,
        remedy="its metadata and its module disagree: reinstall TensorFlow",
        built=str(cached),
    )
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(cached, text)
    except OSError as exc:  # a read-only home: the table still judges, it is built again next time
        log.warning("cannot keep the op table of TensorFlow %s in %s: %s", version, cached, exc)
        table = dataclasses.replace(table, built="memory only")
    return table


def _build_from_registry(version: str, cached: Path) -> bytes:
    """``python -m tfship.inspect._opdefs_gen`` in a child process: this one never imports TensorFlow."""
    log.info(
        "tfship has no op table for TensorFlow %s: building one from its op registry, once, kept in %s",
        version,
        cached,
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    with tempfile.TemporaryDirectory(prefix="tfship-opdefs-") as workdir:
        out = Path(workdir) / table_file(version)
        command = [sys.executable, *_interpreter_flags(), "-m", "tfship.inspect._opdefs_gen", str(out)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            cause = str(exc)
        else:
            if done.returncode == 0:
                return out.read_bytes()
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            cause = lines[-1] if lines else f"exit status {done.returncode}"
    raise TfshipError(
        f"cannot judge against TensorFlow {version}, the one installed here: tfship has tables for "
        f"TensorFlow {', '.join(shipped_tensorflows())} only, and building one from its op registry "
        f"failed ({cause}); name one of those as the target"
    )


def _interpreter_flags() -> list[str]:
    """This interpreter's flags that choose what it imports, so the child sees the same TensorFlow."""
    flags = (
        ("-I", sys.flags.isolated),
        ("-E", sys.flags.ignore_environment),
        ("-s", sys.flags.no_user_site),
        ("-S", sys.flags.no_site),
    )
    return [flag for flag, on in flags if on]


def render_table(table: Mapping[str, Any]) -> str:
    """The file's text: JSON with one op per line, sorted, so a TensorFlow upgrade diffs by op."""
    head = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in table.items() if k != "ops"]
    ops = [f"{json.dumps(op)}: {json.dumps(attrs)}" for op, attrs in sorted(table["ops"].items())]
    return "{\n" + ",\n".join(head) + ',\n"ops": {\n' + ",\n".join(ops) + "\n}\n}\n"
