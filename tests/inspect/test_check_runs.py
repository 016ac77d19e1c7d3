"""An export that loads but cannot answer a request is not "ready": check --run, verification
and the versions listing all say so, with TensorFlow's own cause in one line."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.exporters import VerificationError, verify_export

pytestmark = pytest.mark.slow


def _unanswerable(path: pathlib.Path) -> pathlib.Path:
    """A TF1 export whose signature promises x of shape [?, 10] to a matmul by a [13, 3] weight.

    Nothing in the protos is wrong (the placeholder takes any shape), so only running it shows
    that no request the signature describes can be answered.
    """
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, [None, None], name="x")
        w = v1.get_variable("w", [13, 3], initializer=v1.ones_initializer())
        y = tf.matmul(x, w, name="y")
        sess.run(v1.global_variables_initializer())
        x_info = v1.saved_model.utils.build_tensor_info(x)
        x_info.tensor_shape.dim[1].size = 10
        signature = v1.saved_model.signature_def_utils.build_signature_def(
            {"x": x_info},
            {"y": v1.saved_model.utils.build_tensor_info(y)},
            "tensorflow/serving/predict",
        )
        builder = v1.saved_model.Builder(str(path))
        builder.add_meta_graph_and_variables(sess, ["serve"], {"serving_default": signature})
        builder.save()
    return path


CAUSE = "Matrix size-incompatible: In[0]: [1,10], In[1]: [13,3]"


def test_check_is_proto_only_and_run_finds_the_op_error(tmp_path: pathlib.Path) -> None:
    export = _unanswerable(tmp_path / "m" / "1")
    plain = CliRunner().invoke(cli, ["inspect", "check", str(export)])
    assert plain.exit_code == 0, plain.output
    ran = CliRunner().invoke(cli, ["inspect", "check", str(export), "--run"])
    assert ran.exit_code == 3
    assert f"run: signature serving_default cannot answer a request: {CAUSE}" in ran.output
    assert "[[" not in ran.output and "Graph execution error" not in ran.output


def test_verification_refuses_an_export_that_cannot_answer(tmp_path: pathlib.Path) -> None:
    export = _unanswerable(tmp_path / "m" / "1")
    with pytest.raises(VerificationError, match=r"signature 'serving_default' cannot answer .*") as err:
        verify_export(export)
    assert str(err.value).endswith(CAUSE)


def test_versions_does_not_serve_a_version_without_its_variables(
    exports: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    base = tmp_path / "base"
    shutil.copytree(exports["linear_parsing"], base / "1")
    shutil.copytree(exports["linear_parsing"], base / "2")
    shutil.rmtree(base / "2" / "variables")
    result = CliRunner().invoke(cli, ["inspect", "versions", str(base), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["served"] is None
    assert "variables/variables.index is missing" in report["unloadable"]
    text = CliRunner().invoke(cli, ["inspect", "versions", str(base)]).stdout
    assert "would load version 2, which cannot load" in text
    assert not any(line.startswith("*") for line in text.splitlines())
