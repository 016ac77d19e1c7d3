"""``inspect check`` (and the other inspect commands) where TensorFlow cannot be imported.

Each run is a fresh interpreter in which ``import tensorflow`` (and TF Serving's, Estimator's and
Keras's packages) raises ``ImportError``; it reports on stderr any such module that got loaded.
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest

from tfship.inspect import check_saved_model, example_request, read_saved_model, write_warmup

NEWTF = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "newtf"
BLOCKED = ("tensorflow", "tensorflow_serving", "tensorflow_estimator", "keras", "tf_keras")
WITHOUT_TENSORFLOW = f"""
import sys
BLOCKED = {BLOCKED!r}
for name in BLOCKED:
    sys.modules[name] = None  # `import {{name}}` now raises ImportError
from tfship.cli import main
try:
    main()
finally:
    loaded = sorted(n for n, m in sys.modules.items() if m is not None and n.split(".")[0] in BLOCKED)
    print("loaded:", ",".join(loaded), file=sys.stderr)
"""
#: Every check ``inspect check`` makes on an export with a valid warmup file and no defects.
EVERY_CHECK = {
    "version_dir",
    "saved_model_file",
    "variables",
    "assets",
    "serving_default",
    "signature_valid",
    "restore",
    "denylisted_ops",
    "target_tf",
    "registered_ops",
    "op_versions",
    "warmup",
    "content_hash",
}


def _tfship(*args: str) -> subprocess.CompletedProcess[str]:
    """``tfship ARGS`` where TensorFlow cannot be imported; stderr's last line lists what was."""
    command = [sys.executable, "-c", WITHOUT_TENSORFLOW, *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    *rest, last = result.stderr.splitlines()
    assert last == "loaded: ", result.stderr  # nothing of TensorFlow was imported
    result.stderr = "\n".join(rest)
    return result


def _findings(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["check"], f["severity"], f["message"]) for f in report["findings"]]


@pytest.mark.slow
def test_check_runs_every_check_without_tensorflow(tiny_model: Any, tmp_path: pathlib.Path) -> None:
    export = shutil.copytree(tiny_model.export("best"), tmp_path / "warm" / "1")
    info = read_saved_model(export)
    keys = [key for key, sig in info.meta_graph("serve").signatures.items() if not sig.internal]
    requests = [example_request(info, signature=key) for key in keys]
    write_warmup(export / "assets.extra" / "tf_serving_warmup_requests", requests)
    result = _tfship("inspect", "check", str(export), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {f["check"] for f in report["findings"]} == EVERY_CHECK
    assert all(f["severity"] in ("ok", "info") for f in report["findings"]), report
    assert _findings(report) == _findings(check_saved_model(export).to_dict())
    by_check = {f["check"]: f["message"] for f in report["findings"]}
    assert by_check["registered_ops"].startswith("all ") and by_check["registered_ops"].endswith(
        " ops are registered"
    )
    assert by_check["warmup"] == f"warmup file valid ({len(keys)} records)" and len(keys) > 1


def _with_defects(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    """A copy whose graph has an op no TensorFlow registers and a MatMul with a newer attribute."""
    shutil.copytree(src, dst)
    proto = read_saved_model(dst).proto
    graph = proto.meta_graphs[0].graph_def
    node = graph.node.add()
    node.name, node.op = "mystery", "TfshipNoSuchOp"
    matmul = next(n for n in graph.node if n.op == "MatMul")
    matmul.attr["tfship_newer_attr"].b = True
    (dst / "saved_model.pb").write_bytes(proto.SerializeToString())
    return dst


@pytest.mark.slow
def test_unknown_ops_and_attributes_are_found_without_tensorflow(
    tiny_model: Any, tmp_path: pathlib.Path
) -> None:
    export = _with_defects(tiny_model.export("best"), tmp_path / "defects" / "1")
    result = _tfship("inspect", "check", str(export), "--target-tf", "2.15")
    assert result.returncode == 3, result.stderr
    unknown = "ERROR    registered_ops: ops TensorFlow 2.15.1 does not register (custom ops?): TfshipNoSuchOp"
    assert unknown in result.stdout
    assert (
        "ERROR    op_versions: TensorFlow 2.15.1 cannot run ops of a newer one: MatMul has "
        "attributes tfship_newer_attr that it does not know; re-export with Keras's TensorFlow "
        "backend (KERAS_BACKEND=tensorflow), or serve with a TensorFlow that knows these ops\n"
    ) in result.stdout
    assert result.stderr.startswith(f"Error: {export} is not ready to serve: 2 finding(s), first: ")


@pytest.mark.parametrize("name", ["keras_jax_export", "keras_tf_save", "strings_module"])
def test_newer_tensorflow_exports_get_the_same_findings_without_tensorflow(name: str) -> None:
    export = NEWTF / name / "1"
    # judged against TF 2.15, which cannot run a JAX export; TF 2.21 can
    result = _tfship("inspect", "check", str(export), "--json", "--target-tf", "2.15")
    report = json.loads(result.stdout)
    assert _findings(report) == _findings(check_saved_model(export, target_tf="2.15").to_dict())
    checks = {f["check"]: f for f in report["findings"]}
    assert {"registered_ops", "op_versions"} <= set(checks) and report["target_tf"] == "2.15.1"
    if name == "keras_jax_export":
        assert result.returncode == 3
        assert checks["op_versions"]["severity"] == "error"
        assert (
            "XlaCallModule has attributes use_shardy_partitioner that it does not know"
            in (checks["op_versions"]["message"])
        )
        assert "XlaCallModule version 10 is newer than the 8 it runs" in checks["op_versions"]["message"]
    else:
        assert checks["op_versions"]["severity"] == checks["registered_ops"]["severity"] == "ok"


def test_check_run_says_what_to_install_before_checking_anything() -> None:
    result = _tfship("inspect", "check", str(NEWTF / "strings_module" / "1"), "--run")
    assert result.returncode == 1
    assert result.stdout == ""
    # the pip command names this checkout, as the development install is editable
    assert re.fullmatch(
        r"Error: --run \(it loads the model\) needs the 'run' extra \(TensorFlow is not installed\): "
        r'pip install (-e )?"\S*\[run\]"',
        result.stderr,
    ), result.stderr


OTHER_COMMANDS = [
    ["show", "{m}", "--all"],
    ["versions", "{base}"],
    ["diff", "{m}", "{other}"],
    ["scan", "{m}"],
    ["request", "{m}", "--format", "curl"],
]


@pytest.mark.parametrize("args", OTHER_COMMANDS, ids=lambda args: args[0])
def test_the_other_inspect_commands_need_no_tensorflow(args: list[str]) -> None:
    base = NEWTF / "multi_output"
    names = {"m": base / "1", "base": base, "other": NEWTF / "keras_export" / "1"}
    result = _tfship("inspect", *(a.format(**names) for a in args))
    assert result.returncode == (3 if args[0] == "diff" else 0), result.stderr  # breaking changes: 3
    assert result.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("args", OTHER_COMMANDS, ids=lambda args: args[0])
def test_the_other_inspect_commands_need_no_tensorflow_on_an_estimator_export(
    tiny_model: Any, args: list[str]
) -> None:
    best, latest = tiny_model.export("best"), tiny_model.export("latest")
    names = {"m": best, "base": best.parent, "other": latest}
    result = _tfship("inspect", *(a.format(**names) for a in args))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
