"""The ops TensorFlow 2.15 runs, as a table shipped with tfship, so ``inspect check`` needs no TensorFlow.

``opdefs.json`` (package data of ``tfship.inspect``) holds what the readiness checks consult and
nothing more: the TensorFlow version it describes, every op type that version registers with
the names of its attributes (no types, defaults or arguments: no check reads them), and the
newest ``XlaCallModule`` version it runs. ``make opdefs`` writes it from the installed
TensorFlow (``python -m tfship.inspect._opdefs_gen OUTPUT``); a test fails while it is stale.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfship.errors import TfshipError

TABLE_FILE = "opdefs.json"
SCHEMA = "tfship.opdefs"
SCHEMA_VERSION = 1
HOLDS = (
    "every op type the TensorFlow named here registers, with the names of its attributes; "
    "the newest XlaCallModule version it runs"
)


@dataclass(frozen=True)
class OpTable:
    """The op types a TensorFlow registers, with their attribute names.

    Example:
        >>> table = op_table()
        >>> sorted(table.attributes("MatMul"))
        ['T', 'transpose_a', 'transpose_b']
        >>> table.attributes("TfshipNoSuchOp") is None
        True
    """

    tensorflow: str
    xla_call_module_max_version: int
    ops: Mapping[str, frozenset[str]]

    def attributes(self, op: str) -> frozenset[str] | None:
        """The attribute names of a registered op type, or ``None`` when it is not registered."""
        return self.ops.get(op)


@functools.lru_cache(maxsize=1)
def op_table() -> OpTable:
    """The table shipped with tfship, read once.

    Raises:
        TfshipError: the file is missing from the installation or unreadable.
    """
    resource = importlib.resources.files("tfship.inspect").joinpath(TABLE_FILE)
    where = f"tfship's op table ({TABLE_FILE} in tfship.inspect)"
    try:
        data = json.loads(resource.read_bytes())
    except OSError as exc:
        raise TfshipError(f"{where} is missing: reinstall tfship") from exc
    except ValueError as exc:
        raise TfshipError(f"{where} is not valid JSON ({exc}): reinstall tfship") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("version") != SCHEMA_VERSION:
        raise TfshipError(f"{where} is not a {SCHEMA} table version {SCHEMA_VERSION}: reinstall tfship")
    return OpTable(
        tensorflow=str(data["tensorflow"]),
        xla_call_module_max_version=int(data["xla_call_module_max_version"]),
        ops={op: frozenset(attrs) for op, attrs in data["ops"].items()},
    )


def render_table(table: Mapping[str, Any]) -> str:
    """The file's text: JSON with one op per line, sorted, so a TensorFlow upgrade diffs by op."""
    head = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in table.items() if k != "ops"]
    ops = [f"{json.dumps(op)}: {json.dumps(attrs)}" for op, attrs in sorted(table["ops"].items())]
    return "{\n" + ",\n".join(head) + ',\n"ops": {\n' + ",\n".join(ops) + "\n}\n}\n"
