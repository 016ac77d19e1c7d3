"""`inspect diff`: the loader's `__saved_model_init_op` never breaks clients, and two versions
with the same interface are told apart by their weights (checksums from the index)."""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.inspect import diff_saved_models, read_saved_model

pytestmark = pytest.mark.slow


def _diff(a: pathlib.Path, b: pathlib.Path) -> Any:
    return CliRunner().invoke(cli, ["inspect", "diff", str(a), str(b)])


def test_an_init_op_signature_removed_is_compatible(
    exports: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    from tensorflow.core.protobuf import saved_model_pb2

    old = exports["tf2_module"]
    assert "__saved_model_init_op" in read_saved_model(old).meta_graph().signatures
    new = tmp_path / "m" / "2"
    shutil.copytree(old, new)
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((new / "saved_model.pb").read_bytes())
    del proto.meta_graphs[0].signature_def["__saved_model_init_op"]
    (new / "saved_model.pb").write_bytes(proto.SerializeToString())
    for a, b, kind in ((old, new, "internal_signature_removed"), (new, old, "internal_signature_added")):
        result = _diff(a, b)
        assert result.exit_code == 0, result.output
        what = "signature removed" if b == new else "new signature"
        assert f"compatible  serve/__saved_model_init_op: {what}" in result.stdout
        report = diff_saved_models(read_saved_model(a), read_saved_model(b))
        assert [c.kind for c in report.changes] == [kind]
        assert report.same_weights is True


def test_the_same_interface_with_other_weights_is_said(tiny_model: Any) -> None:
    first, second = (pathlib.Path(p) for p in tiny_model.result.exports["latest"][-2:])
    result = _diff(first, second)
    assert result.exit_code == 0, result.output
    assert "compatible  variables: same interface, different weights: " in result.stdout
    assert "global_step" in result.stdout
    doc = json.loads(CliRunner().invoke(cli, ["inspect", "diff", str(first), str(second), "--json"]).stdout)
    assert doc["same_weights"] is False
    assert [c["kind"] for c in doc["changes"]] == ["weights_changed"]


def test_a_copy_has_the_same_weights(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    copy = tmp_path / "copy" / "1"
    shutil.copytree(tiny_model.export("best"), copy)
    result = _diff(tiny_model.export("best"), copy)
    assert result.exit_code == 0, result.output
    assert "no differences in signatures, features, ops or variables; the same weights\n" in result.stdout
