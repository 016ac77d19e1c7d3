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


def test_a_new_function_over_the_same_weights_keeps_them_the_same(tmp_path: pathlib.Path) -> None:
    # a TF2 export's index also holds the object graph, which changes with the functions saved;
    # it is not a weight, so a version that only adds a signature still has the same weights
    import tensorflow as tf

    module = tf.Module()
    module.v = tf.Variable([1.0, 2.0, 3.0])
    spec = [tf.TensorSpec([None, 3], name="x")]
    module.f = tf.function(lambda x: {"y": module.v * x}, spec, autograph=False)
    tf.saved_model.save(module, str(tmp_path / "m" / "1"), signatures=module.f)
    module.g = tf.function(lambda x: {"y": module.v + x}, spec, autograph=False)
    tf.saved_model.save(
        module, str(tmp_path / "m" / "2"), signatures={"serving_default": module.f, "plus": module.g}
    )
    report = diff_saved_models(read_saved_model(tmp_path / "m" / "1"), read_saved_model(tmp_path / "m" / "2"))
    assert "weights_changed" not in [c.kind for c in report.changes], report.to_dict()
    assert report.same_weights is True, report.to_dict()
    module.v.assign([1.0, 2.0, 4.0])
    tf.saved_model.save(module, str(tmp_path / "m" / "3"), signatures=module.f)
    report = diff_saved_models(read_saved_model(tmp_path / "m" / "1"), read_saved_model(tmp_path / "m" / "3"))
    assert report.same_weights is False
    assert [c.detail for c in report.changes if c.kind == "weights_changed"] == [
        "same interface, different weights: 1 of 1 tensors differ (v/.ATTRIBUTES/VARIABLE_VALUE)"
    ]
