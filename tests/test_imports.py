"""Importing tfship and asking for help must not import TensorFlow (start-up stays fast)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = "import sys; {body}; print('tensorflow' in sys.modules)"


def _imports_tensorflow(body: str) -> bool:
    code = PROBE.format(body=body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1] == "True"


PACKAGES = ["tfship", "tfship.errors", "tfship.cli", "tfship.schema", "tfship.data", "tfship.trainer",
            "tfship.exporters", "tfship.inspect", "tfship.loaders", "tfship.serve_client",
            "tfship.server"]


@pytest.mark.parametrize("module", PACKAGES)
def test_import_does_not_import_tensorflow(module: str) -> None:
    assert not _imports_tensorflow(f"import {module}")


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_cli_help_does_not_import_tensorflow(args: list[str]) -> None:
    body = (
        "from tfship.cli import cli\n"
        f"try:\n    cli.main({args!r}, standalone_mode=False)\nexcept SystemExit:\n    pass"
    )
    code = f"import sys\n{body}\nprint('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_probe_can_see_tensorflow() -> None:
    # The probe itself must be able to fail: importing tfship._tf.tf() does import TensorFlow.
    assert _imports_tensorflow("from tfship._tf import tf; tf()")
