"""What the original cannot do: show a model it cannot load; warmup files' TFRecord framing
holds up."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tfship.cli import cli
from tfship.errors import InputError
from tfship.inspect import read_saved_model, read_warmup, write_warmup

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
    # it loads the model to list the functions, and fails (TF 2.15) or lists none (later ones)
    assert reference.returncode != 0 or "Concrete Functions: N/A" in reference.stdout
    ours = CliRunner().invoke(cli, ["inspect", "show", str(path), "--all"])
    assert ours.exit_code == 0
    assert "'TfshipNoSuchOp'" in ours.stdout and "Function Name: '__call__'" in ours.stdout
    check = CliRunner().invoke(cli, ["inspect", "check", str(path)])
    assert check.exit_code == 3
    assert re.search(r"ERROR    registered_ops: ops this TensorFlow \([\d.]+\) does not", check.stdout)
    assert "TfshipNoSuchOp" in check.stdout


def _logs(payloads: list[bytes]) -> list[Any]:
    """One PredictionLog per payload, carrying it as a string tensor (an empty log for b"")."""
    from tensorflow_serving.apis import prediction_log_pb2

    logs = []
    for payload in payloads:
        log = prediction_log_pb2.PredictionLog()
        if payload:
            log.predict_log.request.inputs["x"].string_val.append(payload)
        logs.append(log)
    return logs


@settings(deadline=None)  # the first example imports TF Serving's protos
@given(st.lists(st.binary(max_size=300), max_size=8))
def test_warmup_round_trip(payloads: list[bytes]) -> None:
    logs = _logs(payloads)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "tf_serving_warmup_requests"
        assert write_warmup(path, logs) == len(logs)
        # TF Serving's classes written, tfship's read back: the same records, byte for byte
        assert [log.SerializeToString() for log in read_warmup(path)] == [
            log.SerializeToString() for log in logs
        ]


def test_a_warmup_request_that_is_not_a_prediction_log_is_refused_writing_nothing(
    tmp_path: pathlib.Path,
) -> None:
    from tensorflow_serving.apis import predict_pb2

    path = tmp_path / "tf_serving_warmup_requests"
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    with pytest.raises(InputError, match=r"request 1 is a tensorflow\.serving\.PredictRequest, not a"):
        write_warmup(path, [*_logs([b"x"]), request])
    assert not path.exists()
    with pytest.raises(InputError, match="request 0 is a dict"):
        write_warmup(path, [{"x": 1}])


@settings(deadline=None)
@given(st.binary(min_size=1, max_size=100), st.data())
def test_warmup_corruption_is_named(payload: bytes, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "tf_serving_warmup_requests"
        write_warmup(path, _logs([payload]))
        raw = bytearray(path.read_bytes())
        position = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        raw[position] ^= 0xFF
        path.write_bytes(bytes(raw))
        # The CRCs catch any flipped byte, before the record is read as a PredictionLog.
        with pytest.raises(InputError, match=r"record 0 (is corrupt|has a corrupt length)"):
            read_warmup(path)
