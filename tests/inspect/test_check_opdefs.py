"""The op table ``inspect check`` reads instead of TensorFlow: shipped, and fresh for the pinned one."""

from __future__ import annotations

import importlib.resources
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _shipped() -> bytes:
    return importlib.resources.files("tfship.inspect").joinpath("opdefs.json").read_bytes()


@pytest.mark.slow
def test_the_shipped_table_is_what_the_installed_tensorflow_registers(tmp_path: pathlib.Path) -> None:
    fresh = tmp_path / "opdefs.json"
    subprocess.run([sys.executable, "-m", "tfship.inspect._opdefs_gen", str(fresh)], check=True, timeout=300)
    import tensorflow as tf

    table = json.loads(fresh.read_text())
    assert table["tensorflow"] == tf.__version__
    assert len(table["ops"]) > 1000 and "MatMul" in table["ops"] and "XlaCallModule" in table["ops"]
    assert fresh.read_bytes() == _shipped(), "src/tfship/inspect/opdefs.json is stale: run make opdefs"


def test_the_table_says_what_it_describes_and_ships_as_package_data() -> None:
    table = json.loads(_shipped())
    assert table["schema"] == "tfship.opdefs" and table["version"] == 1
    assert table["tensorflow"] == "2.15.1"
    assert table["xla_call_module_max_version"] == 8
    assert table["ops"]["MatMul"] == ["T", "transpose_a", "transpose_b"]
    package_data = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-data]")[1]
    assert '\n"tfship.inspect" = ["opdefs.json"]\n' in package_data.split("\n[")[0]
