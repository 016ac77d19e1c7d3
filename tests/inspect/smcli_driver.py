"""Run TensorFlow 2.15.1's ``saved_model_cli show`` for many argument lists in one process.

Usage: ``python smcli_driver.py '<json list of argv lists>'``; prints a JSON list of stdouts.
The flags are parsed exactly as the saved_model_cli command parses them and its own ``show()``
prints; only the Python start-up (and TensorFlow's import) is shared between the runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys


def main() -> None:
    from absl import flags
    from tensorflow.python.tools import saved_model_cli

    outputs = []
    for argv in json.loads(sys.argv[1]):
        flags.FLAGS.unparse_flags()
        flags.FLAGS(["saved_model_cli", *argv])
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            saved_model_cli.show()
        outputs.append(buffer.getvalue())
    json.dump(outputs, sys.stdout)


if __name__ == "__main__":
    main()
