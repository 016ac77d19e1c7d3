"""Exports written by tfship.exporters (both receivers, warmup, metadata) through the inspector."""

from __future__ import annotations

import json
import pathlib

import pytest
from click.testing import CliRunner

from estimator_lane import build
from tfship.cli import cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def our_export(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A LinearClassifier exported by tfship.exporters with both receivers, warmup and metadata
    (by TensorFlow 2.15, on either lane)."""
    return pathlib.Path(build("inspect/inspect_exports:tfship_export", tmp_path_factory.mktemp("ours")))


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
