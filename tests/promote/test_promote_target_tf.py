"""``promote --target-tf``: the candidate's ops are judged against the TensorFlow that will serve it.

The candidate is a Keras 3 export with a ``DecodeWebP`` node beside the model, an op TF 2.21
registers and TF 2.15 does not: TF 2.15 cannot load it, TF 2.21 can. By default the TensorFlow
installed here judges, the one promote's own serving processes run.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.inspect import read_saved_model
from tfship.promote import PromoteOptions, promote

pytestmark = pytest.mark.slow

KERAS_EXPORT = Path(__file__).resolve().parents[1] / "fixtures" / "newtf" / "keras_export" / "1"
INSTALLED = importlib.metadata.version("tensorflow")
QUICK = PromoteOptions(dry_run=True, count=4, latency_calls=3, max_load_seconds=120)


@pytest.fixture(scope="module")
def newer_op(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the Keras 3 export with a ``DecodeWebP`` node fed by a constant."""
    export = Path(shutil.copytree(KERAS_EXPORT, tmp_path_factory.mktemp("newer_op") / "1"))
    proto = read_saved_model(export).proto
    graph = proto.meta_graphs[0].graph_def
    const = graph.node.add(name="webp_bytes", op="Const")
    const.attr["dtype"].type = const.attr["value"].tensor.dtype = 7  # DT_STRING
    const.attr["value"].tensor.string_val.append(b"")
    graph.node.add(name="webp", op="DecodeWebP", input=["webp_bytes"]).attr["channels"].i = 3
    (export / "saved_model.pb").write_bytes(proto.SerializeToString())
    return export


def _empty_base(tmp_path: Path) -> Path:
    base = tmp_path / "serving"
    base.mkdir()
    return base


def test_ready_judges_the_candidate_against_the_target(newer_op: Path, tmp_path: Path) -> None:
    base = _empty_base(tmp_path)
    old = promote(newer_op, base, dataclasses.replace(QUICK, target_tf="2.15"))
    ready = old.checks[0]
    assert (ready.name, ready.verdict) == ("ready", "fail")
    assert ready.summary.startswith(
        "1 error(s), 0 warning(s) on TensorFlow 2.15.1; registered_ops: ops TensorFlow 2.15.1 does not "
        "register (custom ops?): DecodeWebP"
    )
    assert (
        "ready judged the candidate's ops against TensorFlow 2.15.1, the target named; serves, same "
        "answers and as fast ran it on the TensorFlow installed here"
    ) in old.notes
    new = promote(newer_op, base, dataclasses.replace(QUICK, target_tf="2.21.0"))
    ready = new.checks[0]
    assert ready.verdict == "pass"
    assert ready.summary.startswith("0 error(s), 0 warning(s) on TensorFlow 2.21.0")
    # serving is done here: only a TensorFlow that registers DecodeWebP loads it
    assert new.promoted == (INSTALLED == "2.21.0"), [c.line() for c in new.checks]
    assert not list(base.iterdir())  # a dry run


def test_by_default_the_installed_tensorflow_judges(newer_op: Path, tmp_path: Path) -> None:
    decision = promote(newer_op, _empty_base(tmp_path), QUICK)
    ready = decision.checks[0]
    assert f" on TensorFlow {INSTALLED}" in ready.summary
    assert ready.failed == (INSTALLED == "2.15.1") and decision.promoted == (INSTALLED == "2.21.0")
    assert not [note for note in decision.notes if "the target named" in note]
    findings = {f["check"]: f["message"] for f in ready.numbers["findings"]}
    assert findings["target_tf"] == f"ops judged against TensorFlow {INSTALLED}, the one installed here"


def test_an_unknown_target_is_refused_before_anything_is_served(newer_op: Path, tmp_path: Path) -> None:
    base = _empty_base(tmp_path)
    result = CliRunner().invoke(cli, ["promote", str(newer_op), "--to", str(base), "--target-tf", "2.16"])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == (
        "Error: no op table for the target TensorFlow '2.16': tfship has tables for TensorFlow "
        "2.15.1, 2.21.0; give one, or its major.minor such as 2.15\n"
    )
    assert not list(base.iterdir())
