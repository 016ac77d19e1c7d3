"""Exports written by tfship.exporters (both receivers, warmup, metadata) through the inspector."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def our_export(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    import inspect_exports
    import tensorflow as tf
    from tensorflow_estimator import estimator

    from tfship.exporters import both_receiver, export_model

    root = tmp_path_factory.mktemp("ours")
    est = estimator.LinearClassifier(
        inspect_exports._columns(), config=inspect_exports._run_config(root / "model")
    )
    est.train(inspect_exports._input_fn, steps=2)
    spec: dict[str, Any] = {
        "age": tf.io.FixedLenFeature([1], tf.float32, default_value=[40.0]),
        "color": tf.io.VarLenFeature(tf.string),
    }
    example = tf.train.Example()
    example.features.feature["age"].float_list.value.append(33.0)
    example.features.feature["color"].bytes_list.value.append(b"red")
    result = export_model(
        est,
        root / "export" / "linear",
        both_receiver(spec),
        warmup=[example],
        eval_result={"accuracy": 0.75},
        exporter={"name": "final"},
    )
    return pathlib.Path(result.path)


def test_check_versions_and_request(our_export: pathlib.Path) -> None:
    runner = CliRunner()
    check = runner.invoke(cli, ["inspect", "check", str(our_export), "--json"])
    assert check.exit_code == 0, check.output
    findings = {f["check"]: f for f in json.loads(check.output)["findings"]}
    assert findings["warmup"]["severity"] == "ok"
    versions = runner.invoke(cli, ["inspect", "versions", str(our_export.parent), "--json"])
    doc = json.loads(versions.output)
    assert doc["served"] == int(our_export.name)
    assert doc["versions"][-1]["metrics"]["accuracy"] == 0.75
    assert doc["versions"][-1]["exporter"]["name"] == "final"
    show = runner.invoke(cli, ["inspect", "show", str(our_export), "--json"])
    sigs = json.loads(show.output)["meta_graphs"][0]["signatures"]
    assert sigs["serving_default"]["feature_spec"]["age"]["default"] == [40.0]
    raw = [k for k in sigs if k.startswith("raw:")]
    assert raw and sigs[raw[0]]["inputs"]["color"]["encoding"] == "coo_sparse"
