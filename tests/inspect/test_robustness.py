"""What the original cannot do: show a model it cannot load; TFRecord framing holds up."""

from __future__ import annotations

import io
import pathlib
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tfship._wire import read_records, write_records
from tfship.cli import cli
from tfship.errors import InputError
from tfship.inspect import read_saved_model

SMCLI = pathlib.Path(sys.executable).parent / "saved_model_cli"


def _with_unknown_op(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    shutil.copytree(src, dst)
    proto = read_saved_model(dst).proto
    graph = proto.meta_graphs[0].graph_def
    body = next(f for f in graph.library.function if "__call__" in f.signature.name)
    node = body.node_def.add()
    node.name, node.op = "mystery", "TfshipNoSuchOp"
    (dst / "saved_model.pb").write_bytes(proto.SerializeToString())
    return dst


@pytest.mark.slow
def test_show_all_of_a_model_tensorflow_cannot_load(
    exports: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    path = _with_unknown_op(exports["tf2_module"], tmp_path / "custom_op" / "1")
    reference = subprocess.run(
        [str(SMCLI), "show", "--dir", str(path), "--all"], capture_output=True, text=True
    )
    assert reference.returncode != 0  # it loads the model to list the functions, and fails
    ours = CliRunner().invoke(cli, ["inspect", "show", str(path), "--all"])
    assert ours.exit_code == 0
    assert "'TfshipNoSuchOp'" in ours.stdout and "Function Name: '__call__'" in ours.stdout
    check = CliRunner().invoke(cli, ["inspect", "check", str(path)])
    assert check.exit_code == 3
    assert "ERROR    registered_ops: ops this TensorFlow does not register" in check.stdout
    assert "TfshipNoSuchOp" in check.stdout


@given(st.lists(st.binary(max_size=300), max_size=8))
def test_tfrecord_round_trip(records: list[bytes]) -> None:
    buffer = io.BytesIO()
    assert write_records(buffer, records) == len(records)
    buffer.seek(0)
    assert list(read_records(buffer)) == records


@given(st.binary(min_size=1, max_size=100), st.data())
def test_tfrecord_corruption_is_named(record: bytes, data: st.DataObject) -> None:
    buffer = io.BytesIO()
    write_records(buffer, [record])
    raw = bytearray(buffer.getvalue())
    position = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[position] ^= 0xFF
    with pytest.raises(InputError, match="record 0"):
        list(read_records(io.BytesIO(bytes(raw)), where="warmup"))
