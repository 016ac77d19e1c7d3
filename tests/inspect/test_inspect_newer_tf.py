"""``inspect show`` and ``inspect check`` on SavedModels exported by a newer TensorFlow and Keras 3.

The fixtures and the newer TensorFlow's own answers (``saved_model_cli show``, its signatures)
are committed under ``tests/fixtures/newtf`` (``make fixtures-newtf`` rebuilds them).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.inspect import check_saved_model, read_saved_model

NEWTF = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "newtf"
EXPECTED: dict[str, Any] = json.loads((NEWTF / "expected.json").read_text())
MODELS = sorted(EXPECTED["models"])
#: Exports TF Serving 2.15 can run; the others must be reported as not ready.
RUNNABLE = {"keras_export", "multi_output", "strings_module"}


def _dir(name: str) -> pathlib.Path:
    return NEWTF / name / "1"


def test_fixtures_come_from_a_newer_tensorflow() -> None:
    major, minor = (int(p) for p in EXPECTED["tensorflow"].split(".")[:2])
    assert (major, minor) > (2, 15) and EXPECTED["keras"].startswith("3.")
    assert {"keras_export", "keras_tf_save", "strings_module", "multi_output"} <= set(MODELS)


@pytest.mark.parametrize("name", MODELS)
def test_show_matches_the_newer_saved_model_cli(name: str) -> None:
    args = ["inspect", "show", "--dir", str(_dir(name)), "--tag_set", "serve"]
    result = CliRunner().invoke(cli, [*args, "--signature_def", "serving_default"])
    assert result.exit_code == 0, result.output
    assert result.stdout == EXPECTED["models"][name]["saved_model_cli_show"]


@pytest.mark.parametrize("name", MODELS)
def test_signatures_read_as_the_newer_tensorflow_reads_them(name: str) -> None:
    mg = read_saved_model(_dir(name)).meta_graph(("serve",))
    for key, want in EXPECTED["models"][name]["signatures"].items():
        sig = mg.signature(key)
        assert sig.method_name == want["method"]
        for ours, theirs in ((sig.inputs, want["inputs"]), (sig.outputs, want["outputs"])):
            assert sorted(ours) == sorted(theirs)
            for k, info in ours.items():
                shape = None if info.shape is None else [-1 if d is None else d for d in info.shape]
                assert (info.name, shape) == (theirs[k]["name"], theirs[k]["shape"])
                assert info.dtype == theirs[k]["dtype"]


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_check_is_ready_only_for_what_tf_serving_can_run(name: str) -> None:
    report = check_saved_model(_dir(name), target_tf="2.15")
    assert (not report.errors) == (name in RUNNABLE), [f.message for f in report.errors]
    checks = {f.check: f for f in report.findings}
    if name == "keras_tf_save":
        (error,) = report.errors
        assert error.check == "restore"
        assert "signature 'serving_default' reads 4 variables (sequential/dense/bias" in error.message
        assert error.message.endswith("cannot run it; re-export with model.export()")
    elif name == "keras_jax_export":
        (error,) = report.errors
        assert error.check == "op_versions"
        assert "XlaCallModule version 10 is newer than the 8 it runs" in error.message
    else:
        assert checks["restore"].severity == checks["op_versions"].severity == "ok"


@pytest.mark.slow
def test_check_cli_names_the_defect_and_exits_3() -> None:
    result = CliRunner().invoke(cli, ["inspect", "check", str(_dir("keras_tf_save"))])
    assert result.exit_code == 3, result.output
    assert "ERROR    restore: signature 'serving_default' reads 4 variables" in result.stdout
    assert result.stdout.rstrip().endswith("NOT READY (1 errors, 0 warnings)")
