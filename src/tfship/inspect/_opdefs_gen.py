"""``python -m tfship.inspect._opdefs_gen OUTPUT`` (``make opdefs``): write the op table
``inspect check`` reads (see :mod:`tfship.inspect._opdefs`) from the installed TensorFlow.

OUTPUT is a file, or a directory: then the table is written there under its own name,
``opdefs-<version>.json``, so each lane's Python writes its TensorFlow's table beside the others.

A module of its own: ``python -m`` on one the package imports would run it a second time.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from tfship._files import write_atomically
from tfship.inspect._opdefs import HOLDS, SCHEMA, SCHEMA_VERSION, render_table, table_file


def table_from_tensorflow() -> dict[str, Any]:
    """The table's content from the installed TensorFlow's op registry (imports TensorFlow)."""
    from tfship._tf import tf, tf_module
    from tfship._wire import message_class

    version = tf().__version__
    c_api = tf_module("tensorflow.python.client.pywrap_tf_session")

    buffer = c_api.TF_GetAllOpList()
    try:
        op_list = message_class("tensorflow.OpList").FromString(c_api.TF_GetBuffer(buffer))
    finally:
        c_api.TF_DeleteBuffer(buffer)
    # read after the op list: importing it must not change what counts as registered
    xla = tf_module("tensorflow.compiler.tf2xla.python.xla")

    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "tensorflow": version,
        "holds": HOLDS,
        "xla_call_module_max_version": int(xla.call_module_maximum_supported_version()),
        "stablehlo_max_version": stablehlo_max_version(),
        "ops": {op.name: sorted(a.name for a in op.attr) for op in op_list.op},
    }


def stablehlo_max_version() -> str | None:
    """The newest StableHLO portable artifact version the installed TensorFlow deserializes,
    or ``None`` when it does not say.

    TensorFlow's StableHLO bindings report the version of the StableHLO library built into it,
    the one ``XlaCallModule`` deserializes its ``module`` with: an artifact written for a newer
    StableHLO fails every call (``failed to deserialize portable artifact using StableHLO_v...``).
    """
    from tfship._tf import tf_module

    try:
        stablehlo = tf_module("tensorflow.compiler.mlir.stablehlo.stablehlo")
    except ImportError:
        return None
    current = getattr(stablehlo, "get_current_version", None)
    return None if current is None else str(current())


def main(argv: list[str]) -> int:
    """``python -m tfship.inspect._opdefs_gen OUTPUT``: write the table from the installed TensorFlow."""
    if len(argv) != 1:
        print("usage: python -m tfship.inspect._opdefs_gen OUTPUT (a file, or a directory)", file=sys.stderr)
        return 2
    table = table_from_tensorflow()
    output = argv[0]
    if os.path.isdir(output):
        output = os.path.join(output, table_file(table["tensorflow"]))
    write_atomically(output, render_table(table))
    print(f"wrote the op table of TensorFlow {table['tensorflow']} to {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
