"""A version whose variables are corrupt, truncated or missing is not ready, and not served.

The checks read ``variables.index`` (a TensorFlow table) and compare each tensor's place,
length and CRC-32C with the data shard, without loading anything.
"""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.inspect import check_saved_model, list_versions

pytestmark = pytest.mark.slow

SHARD = "variables.data-00000-of-00001"


def _copy(tiny_model: Any, tmp_path: pathlib.Path, version: str = "1") -> pathlib.Path:
    target = tmp_path / "penguins" / version
    shutil.copytree(tiny_model.export("best"), target)
    return target


def _kernel_bytes(export: pathlib.Path) -> tuple[str, int, int]:
    """Name, offset and size of the biggest tensor, read with TensorFlow's own reader."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(export / "variables" / "variables"))
    shapes = reader.get_variable_to_shape_map()
    name = max(shapes, key=lambda n: reader.get_tensor(n).nbytes)
    data = (export / "variables" / SHARD).read_bytes()
    raw = reader.get_tensor(name).tobytes()
    return name, data.index(raw), len(raw)


def _check(export: pathlib.Path) -> Any:
    return CliRunner().invoke(cli, ["inspect", "check", str(export), "--json"])


def test_an_intact_export_is_ready(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    report = check_saved_model(_copy(tiny_model, tmp_path), check_registered_ops=False)
    assert not report.errors
    assert [f.severity for f in report.findings if f.check == "variables"] == ["ok"]


def test_replaced_bytes_name_the_file_and_the_tensor(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    export = _copy(tiny_model, tmp_path)
    name, offset, size = _kernel_bytes(export)
    shard = export / "variables" / SHARD
    data = bytearray(shard.read_bytes())
    data[offset + size // 2] ^= 0xFF  # same length, one byte changed
    shard.write_bytes(bytes(data))
    result = _check(export)
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["ready"] is False
    errors = [f["message"] for f in report["findings"] if f["severity"] == "error"]
    assert errors == [
        f"{shard}: the bytes of tensor {name!r} (at {offset}, {size} bytes) do not match their "
        "checksum in the index (corrupt)"
    ]
    assert result.stderr.startswith(f"Error: {export} is not ready to serve: 1 finding(s), first: variables:")


def test_a_truncated_shard_is_named(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    export = _copy(tiny_model, tmp_path)
    shard = export / "variables" / SHARD
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) - 7])
    result = _check(export)
    assert result.exit_code == 3, result.output
    errors = [f["message"] for f in json.loads(result.stdout)["findings"] if f["severity"] == "error"]
    assert len(errors) == 1
    assert errors[0].startswith(f"{shard} is {len(data) - 7} bytes, but tensor ")
    assert errors[0].endswith(f"-{len(data)} (truncated)")


def test_a_missing_shard_is_named(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    export = _copy(tiny_model, tmp_path)
    (export / "variables" / SHARD).unlink()
    result = _check(export)
    assert result.exit_code == 3, result.output
    errors = [f["message"] for f in json.loads(result.stdout)["findings"] if f["severity"] == "error"]
    assert len(errors) == 1
    assert errors[0].startswith(f"{export / 'variables' / SHARD} is missing (it holds ")
    assert "dnn/" in errors[0]


def test_a_corrupt_index_is_named(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    export = _copy(tiny_model, tmp_path)
    index = export / "variables" / "variables.index"
    data = bytearray(index.read_bytes())
    data[10] ^= 0x55
    index.write_bytes(bytes(data))
    errors = check_saved_model(export, check_registered_ops=False).errors
    assert [f.message for f in errors] == [
        f"{index} is corrupt: its data block fails its checksum (the bytes changed)"
    ]
    index.write_bytes(bytes(data[:-20]))
    errors = check_saved_model(export, check_registered_ops=False).errors
    assert [f.message for f in errors] == [
        f"{index} is corrupt: it does not end with a table's magic number (truncated or not an index)"
    ]


def test_versions_does_not_serve_a_corrupt_newest_version(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    _copy(tiny_model, tmp_path, "1")
    newest = _copy(tiny_model, tmp_path, "2")
    shard = newest / "variables" / SHARD
    shard.write_bytes(shard.read_bytes()[:-1])
    report = list_versions(tmp_path / "penguins")
    assert report.served is None
    assert report.unloadable is not None and report.unloadable.startswith(f"{shard} is ")
    text = CliRunner().invoke(cli, ["inspect", "versions", str(tmp_path / "penguins")]).stdout
    assert "would load version 2, which cannot load" in text
    assert "(truncated)" in text
