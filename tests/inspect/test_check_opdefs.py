"""The op tables ``inspect check`` judges a model with, one per TensorFlow tfship ships for.

Each shipped table is what its TensorFlow registers (the installed one's is regenerated and
compared, so each lane checks its own); a model is judged against the TensorFlow that will run
it: the one named with ``--target-tf``, else the installed one, else the newest shipped.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.errors import InputError
from tfship.inspect import check_saved_model, read_saved_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
NEWTF = ROOT / "tests" / "fixtures" / "newtf"
SHIPPED = ("2.15.1", "2.21.0")
INSTALLED = importlib.metadata.version("tensorflow")
UNKNOWN = (
    "no op table for the target TensorFlow {!r}: tfship has tables for TensorFlow 2.15.1, 2.21.0; "
    "give one, or its major.minor such as 2.15"
)


def _shipped_tables() -> dict[str, bytes]:
    """Every ``opdefs-<version>.json`` of the installed package, by version."""
    found = {}
    for entry in importlib.resources.files("tfship.inspect").iterdir():
        match = re.fullmatch(r"opdefs-(.+)\.json", entry.name)
        if match:
            found[match.group(1)] = entry.read_bytes()
    return found


def _copy_with(dst: pathlib.Path, change: Callable[[Any], None]) -> pathlib.Path:
    """A copy of a Keras 3 export (TensorFlow's backend) with ``change`` made to its MetaGraph."""
    shutil.copytree(NEWTF / "keras_export" / "1", dst)
    proto = read_saved_model(dst).proto
    change(proto.meta_graphs[0])
    (dst / "saved_model.pb").write_bytes(proto.SerializeToString())
    return dst


def _matmuls(mg: Any) -> list[Any]:
    nodes = [*mg.graph_def.node, *(n for f in mg.graph_def.library.function for n in f.node_def)]
    found = [node for node in nodes if node.op == "MatMul"]
    assert found
    return found


def _grad_a(mg: Any) -> None:
    """MatMul with ``grad_a`` set, an attribute TF 2.21 added (default false)."""
    for node in _matmuls(mg):
        node.attr["grad_a"].b = True


def _grad_defaults(mg: Any) -> None:
    """MatMul with ``grad_a`` and ``grad_b`` at their defaults, declared by the writer's op list,
    as TF 2.21 writes a graph without stripping defaults (``tf.compat.v1.saved_model.Builder``)."""
    for node in _matmuls(mg):
        node.attr["grad_a"].b = node.attr["grad_b"].b = False
    (matmul,) = (op for op in mg.meta_info_def.stripped_op_list.op if op.name == "MatMul")
    for name in ("grad_a", "grad_b"):
        attr = matmul.attr.add(name=name, type="bool")
        attr.default_value.b = False


def _newer_op(mg: Any) -> None:
    """A ``DecodeWebP`` node, an op TF 2.21 registers and TF 2.15 does not, beside the model."""
    const = mg.graph_def.node.add(name="webp_bytes", op="Const")
    const.attr["dtype"].type = 7  # DT_STRING
    const.attr["value"].tensor.dtype = 7
    const.attr["value"].tensor.string_val.append(b"")
    decode = mg.graph_def.node.add(name="webp", op="DecodeWebP", input=["webp_bytes"])
    decode.attr["channels"].i = 3


@pytest.fixture(scope="module")
def grad_a(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return _copy_with(tmp_path_factory.mktemp("grad_a") / "1", _grad_a)


@pytest.fixture(scope="module")
def grad_defaults(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return _copy_with(tmp_path_factory.mktemp("grad_defaults") / "1", _grad_defaults)


@pytest.fixture(scope="module")
def newer_op(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return _copy_with(tmp_path_factory.mktemp("newer_op") / "1", _newer_op)


EXPECTED_JAX_ERROR = json.loads((NEWTF / "expected.json").read_text())["models"]["keras_jax_export"]["error"]


def _copy_jax_with(dst: pathlib.Path, change: Callable[[bytes], bytes]) -> pathlib.Path:
    """A copy of the JAX-backend export with each XlaCallModule's ``module`` replaced by ``change``'s."""
    shutil.copytree(NEWTF / "keras_jax_export" / "1", dst)
    proto = read_saved_model(dst).proto
    graph = proto.meta_graphs[0].graph_def
    nodes = [
        n
        for n in [*graph.node, *(n for f in graph.library.function for n in f.node_def)]
        if n.op == "XlaCallModule"
    ]
    assert len(nodes) == 2
    for node in nodes:
        node.attr["module"].s = change(node.attr["module"].s)
    (dst / "saved_model.pb").write_bytes(proto.SerializeToString())
    return dst


@pytest.fixture(scope="module")
def jax_at(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], pathlib.Path]:
    """The JAX-backend export with its producer string saying another StableHLO version."""

    def at(version: str) -> pathlib.Path:
        def change(module: bytes) -> bytes:
            assert module.startswith(b"ML\xefR\x0dStableHLO_v1.18.0\x00")
            return module.replace(b"StableHLO_v1.18.0", b"StableHLO_v" + version.encode(), 1)

        return _copy_jax_with(tmp_path_factory.mktemp(f"jax_{version}") / "1", change)

    return at


def _by_check(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {f["check"]: f for f in report["findings"]}


# ------------------------------------------------------------------------------ the tables


@pytest.mark.slow
def test_the_installed_tensorflows_table_is_shipped_and_fresh(tmp_path: pathlib.Path) -> None:
    # the generator names the file after the TensorFlow it ran under, as `make opdefs` writes it
    command = [sys.executable, "-m", "tfship.inspect._opdefs_gen", str(tmp_path)]
    subprocess.run(command, check=True, timeout=300, capture_output=True)
    import tensorflow as tf

    (fresh,) = tmp_path.iterdir()
    assert fresh.name == f"opdefs-{tf.__version__}.json" and tf.__version__ == INSTALLED
    table = json.loads(fresh.read_text())
    assert table["tensorflow"] == tf.__version__
    assert len(table["ops"]) > 1000 and "MatMul" in table["ops"] and "XlaCallModule" in table["ops"]
    shipped = _shipped_tables()
    assert tf.__version__ in shipped, f"no table ships for TensorFlow {tf.__version__}: run make opdefs"
    assert fresh.read_bytes() == shipped[tf.__version__], (
        f"src/tfship/inspect/{fresh.name} is stale: run make opdefs"
    )


def test_each_shipped_table_says_what_it_describes_one_op_a_line() -> None:
    tables = _shipped_tables()
    assert tuple(sorted(tables)) == SHIPPED
    for version, text in tables.items():
        table = json.loads(text)
        assert table["schema"] == "tfship.opdefs" and table["version"] == 2
        assert table["tensorflow"] == version
        lines = text.decode().splitlines()
        assert lines[lines.index('"ops": {') + 1 :][:3] == [
            f"{json.dumps(op)}: {json.dumps(attrs)}," for op, attrs in list(table["ops"].items())[:3]
        ]
        assert len(lines) == len(table["ops"]) + len(table) + 3  # braces, "ops": {, one op a line
        assert list(table["ops"]) == sorted(table["ops"])


def test_the_tables_differ_where_the_tensorflows_do() -> None:
    old, new = (json.loads(_shipped_tables()[v]) for v in SHIPPED)
    assert old["ops"]["MatMul"] == ["T", "transpose_a", "transpose_b"]
    assert new["ops"]["MatMul"] == ["T", "grad_a", "grad_b", "transpose_a", "transpose_b"]
    assert (old["xla_call_module_max_version"], new["xla_call_module_max_version"]) == (8, 10)
    # what each one's StableHLO bindings report, and its XlaCallModule's errors name
    assert (old["stablehlo_max_version"], new["stablehlo_max_version"]) == ("0.14.24", "1.13.7")
    assert "TRTEngineOp" in old["ops"] and "TRTEngineOp" not in new["ops"]


def test_the_pinned_tensorflow_has_a_table_and_the_tables_ship_as_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    pins = set(re.findall(r'"tensorflow==([\d.]+)"', pyproject))
    assert pins and pins <= set(_shipped_tables())
    package_data = pyproject.split("[tool.setuptools.package-data]")[1].split("\n[")[0]
    assert '\n"tfship.inspect" = ["opdefs-*.json"]\n' in package_data


# ------------------------------------------------------------------------------ the target


@pytest.mark.parametrize(
    ("target", "ready", "judged"),
    [
        ("2.15", False, "2.15.1"),
        ("2.15.1", False, "2.15.1"),
        ("2.21", True, "2.21.0"),
        ("2.21.0", True, "2.21.0"),
    ],
)
def test_an_attribute_only_the_newer_tensorflow_has_is_judged_by_the_target(
    grad_a: pathlib.Path, target: str, ready: bool, judged: str
) -> None:
    report = check_saved_model(grad_a, target_tf=target)
    assert report.target_tf == judged
    checks = {f.check: f for f in report.findings}
    assert checks["target_tf"].message == f"ops judged against TensorFlow {judged}, the target named"
    assert (not report.errors) == ready, [f.message for f in report.errors]
    if ready:
        assert checks["op_versions"].message == f"every op's attributes are known to TensorFlow {judged}"
    else:
        (error,) = report.errors
        assert error.check == "op_versions"
        assert error.message.startswith(
            "TensorFlow 2.15.1 cannot run ops of a newer one: "
            "MatMul has attributes grad_a that it does not know"
        )


def test_by_default_the_installed_tensorflow_judges(grad_a: pathlib.Path) -> None:
    report = check_saved_model(grad_a)
    assert report.target_tf == INSTALLED
    checks = {f.check: f for f in report.findings}
    assert checks["target_tf"].message == f"ops judged against TensorFlow {INSTALLED}, the one installed here"
    # TF 2.15 runs no MatMul with grad_a; the newest TensorFlow exported it with one
    assert (not report.errors) == (INSTALLED == "2.21.0"), [f.message for f in report.errors]
    if report.errors:
        newer = f"this TensorFlow ({INSTALLED}) cannot run ops of a newer one"
        assert report.errors[0].message.startswith(newer)


def test_a_jax_export_whose_stablehlo_is_newer_than_either_tensorflow_reads_is_ready_for_neither() -> None:
    # its XlaCallModule holds StableHLO v1.18.0; TF 2.21 reads up to v1.13.7 and fails every call
    # (expected.json holds its error), TF 2.15 up to v0.14.24, and runs XlaCallModule 8 at most
    export = NEWTF / "keras_jax_export" / "1"
    assert EXPECTED_JAX_ERROR.startswith("Cannot deserialize computation: ")
    (error,) = check_saved_model(export, target_tf="2.15").errors
    assert "XlaCallModule version 10 is newer than the 8 it runs" in error.message
    assert "XlaCallModule has attributes use_shardy_partitioner" in error.message
    assert "XlaCallModule holds StableHLO v1.18.0, newer than the v0.14.24 it reads" in error.message
    assert error.message.endswith(
        "re-export with Keras's TensorFlow backend (KERAS_BACKEND=tensorflow), "
        "or serve with a TensorFlow that knows these ops and reads this StableHLO"
    )
    report = check_saved_model(export, target_tf="2.21")
    (error,) = report.errors
    assert (error.check, error.message) == (
        "op_versions",
        (
            "TensorFlow 2.21.0 cannot deserialize this graph's StableHLO: XlaCallModule holds StableHLO "
            "v1.18.0, newer than the v1.13.7 it reads; export it with a JAX and Keras whose StableHLO "
            "TensorFlow 2.21.0 reads (v1.13.7 or older), or with Keras's TensorFlow backend "
            "(KERAS_BACKEND=tensorflow), or serve it with a newer TensorFlow that reads its StableHLO"
        ),
    )
    assert "stablehlo" not in {f.check for f in report.findings}  # said once, as the error


def test_the_cli_says_a_jax_export_is_not_ready_for_the_newest_tensorflow() -> None:
    export = str(NEWTF / "keras_jax_export" / "1")
    result = CliRunner().invoke(cli, ["inspect", "check", export, "--target-tf", "2.21"])
    assert result.exit_code == 3, result.output
    assert (
        "ERROR    op_versions: TensorFlow 2.21.0 cannot deserialize this graph's StableHLO: "
        "XlaCallModule holds StableHLO v1.18.0, newer than the v1.13.7 it reads; "
    ) in result.stdout
    assert result.stdout.endswith(f"{export}: NOT READY (1 errors, 0 warnings)\n")


@pytest.mark.parametrize("target", ["2.15", "2.21"])
def test_a_stablehlo_the_tensorflow_reads_is_judged_ok(
    jax_at: Callable[[str], pathlib.Path], target: str
) -> None:
    # the JAX export's module, said to be written for exactly what the target reads
    reads = {"2.15": "0.14.24", "2.21": "1.13.7"}[target]
    report = check_saved_model(jax_at(reads), target_tf=target)
    checks = {f.check: f for f in report.findings}
    assert "StableHLO" not in checks["op_versions"].message
    assert (checks["stablehlo"].severity, checks["stablehlo"].message) == (
        "ok",
        f"XlaCallModule holds StableHLO v{reads}; TensorFlow {report.target_tf} deserializes up to v{reads}",
    )
    # one patch release newer is newer
    newer = reads.rsplit(".", 1)[0] + "." + str(int(reads.rsplit(".", 1)[1]) + 1)
    (error,) = check_saved_model(jax_at(newer), target_tf=target).errors
    assert f"XlaCallModule holds StableHLO v{newer}, newer than the v{reads} it reads" in error.message


@pytest.mark.parametrize(
    "version",
    [b"\x0d", b"\x02\x01", b"\x80" + b"\x01" * 7, b"\x00" + b"\x00" * 8],  # 1, 2, 8 and 9 bytes
)
def test_the_producer_is_read_after_a_bytecode_version_of_any_length(
    tmp_path: pathlib.Path, version: bytes
) -> None:
    def change(module: bytes) -> bytes:
        return b"ML\xefR" + version + b"StableHLO_v1.13.7\x00" + module.split(b"\x00", 1)[1]

    report = check_saved_model(_copy_jax_with(tmp_path / "1", change), target_tf="2.21")
    checks = {f.check: f for f in report.findings}
    assert checks["stablehlo"].message == (
        "XlaCallModule holds StableHLO v1.13.7; TensorFlow 2.21.0 deserializes up to v1.13.7"
    )


NO_PRODUCER = "its MLIR bytecode has no producer string (of at most 64 bytes)"


@pytest.mark.parametrize(
    ("module", "why"),
    [
        (b"module {}", "it is not MLIR bytecode (no MLIR magic number)"),
        (b"ML\xefR", "its MLIR bytecode ends after the magic number"),
        (b"ML\xefR\x0dStableHLO_v1.18.0", NO_PRODUCER),  # cut short
        (b"ML\xefR\x0d" + b"x" * 100_000 + b"\x00", NO_PRODUCER),  # read 64 bytes at most
        (
            b"ML\xefR\x0dMLIR23.0.0git\x00\x01",
            "its MLIR bytecode was produced by 'MLIR23.0.0git', not by StableHLO (StableHLO_vX.Y.Z)",
        ),
        (
            b"ML\xefR\x0dStableHLO_v1.x\x00",
            "its MLIR bytecode was produced by 'StableHLO_v1.x', not by StableHLO (StableHLO_vX.Y.Z)",
        ),
    ],
)
def test_a_module_whose_stablehlo_cannot_be_read_is_said_not_judged(
    tmp_path: pathlib.Path, module: bytes, why: str
) -> None:
    export = _copy_jax_with(tmp_path / "1", lambda _: module)
    report = check_saved_model(export, target_tf="2.21")
    assert not report.errors, [f.message for f in report.errors]
    warned = sorted(f.message for f in report.warnings if f.check == "stablehlo")
    assert warned == [
        f"cannot judge XlaCallModule {name!r}: {why}, so which StableHLO it needs is unknown; "
        "run it on the TensorFlow that will serve it"
        for name in ("XlaCallModule", "jax2tf_vjp/XlaCallModule")
    ]


@pytest.mark.parametrize(
    ("target", "ready"), [("2.15", False), ("2.21", True), (None, INSTALLED == "2.21.0")]
)
def test_an_op_only_the_newer_tensorflow_registers_is_judged_by_the_target(
    newer_op: pathlib.Path, target: str | None, ready: bool
) -> None:
    report = check_saved_model(newer_op, target_tf=target)
    assert (not report.errors) == ready, [f.message for f in report.errors]
    if not ready:
        (error,) = report.errors
        name = "TensorFlow 2.15.1" if target else "this TensorFlow (2.15.1)"
        assert (error.check, error.message) == (
            "registered_ops",
            f"ops {name} does not register (custom ops?): DecodeWebP",
        )


@pytest.mark.parametrize("target", ["2.15", "2.21"])
def test_new_attributes_at_their_defaults_are_no_problem(grad_defaults: pathlib.Path, target: str) -> None:
    # TensorFlow's loader removes them when its ops lack them (see the run below)
    report = check_saved_model(grad_defaults, target_tf=target)
    assert not report.errors, [f.message for f in report.errors]


def test_the_cli_names_the_tensorflow_it_judged_against(grad_a: pathlib.Path) -> None:
    result = CliRunner().invoke(cli, ["inspect", "check", str(grad_a), "--target-tf", "2.15", "--json"])
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["target_tf"] == "2.15.1" and not report["ready"]
    assert _by_check(report)["op_versions"]["severity"] == "error"
    result = CliRunner().invoke(cli, ["inspect", "check", str(grad_a), "--target-tf", "2.21"])
    assert result.exit_code == 0, result.output
    assert "INFO     target_tf: ops judged against TensorFlow 2.21.0, the target named\n" in result.stdout
    assert "OK       op_versions: every op's attributes are known to TensorFlow 2.21.0\n" in result.stdout


@pytest.mark.parametrize("target", ["2.16", "2.15.0", "2", "latest", "", "2.21.0.1"])
def test_an_unknown_target_is_refused_in_one_line_naming_the_shipped_ones(
    grad_a: pathlib.Path, target: str
) -> None:
    with pytest.raises(InputError) as raised:
        check_saved_model(grad_a, target_tf=target)
    assert str(raised.value) == UNKNOWN.format(target)
    result = subprocess.run(
        [sys.executable, "-m", "tfship", "inspect", "check", str(grad_a), "--target-tf", target],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr == f"Error: {UNKNOWN.format(target)}\n"


def test_a_check_without_the_op_checks_names_no_tensorflow(grad_a: pathlib.Path) -> None:
    report = check_saved_model(grad_a, check_registered_ops=False)
    assert report.target_tf is None and "target_tf" not in {f.check for f in report.findings}
    assert report.to_dict()["target_tf"] is None


# ------------------------------------------------------------------------------ without a table


def _site_without_tensorflow(root: pathlib.Path) -> pathlib.Path:
    """This environment's site-packages without TensorFlow: neither its modules nor its metadata."""
    site = root / "site"
    site.mkdir()
    for entry in pathlib.Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(("tensorflow", "tf_nightly", "tf-nightly")):
            (site / entry.name).symlink_to(entry)
    return site


def _tfship_without_tensorflow(root: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``tfship ARGS`` in an interpreter that has no TensorFlow installed, as the core install."""
    code = (
        "import importlib.util, sys\n"
        "assert importlib.util.find_spec('tensorflow') is None\n"
        "from tfship.cli import main\n"
        "main()\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(root / "site")]),
        "TFSHIP_CACHE_DIR": str(root / "cache"),
    }
    return subprocess.run(
        [sys.executable, "-S", "-c", code, *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_without_tensorflow_the_newest_table_judges_unless_a_target_is_named(
    grad_a: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    _site_without_tensorflow(tmp_path)
    result = _tfship_without_tensorflow(tmp_path, "inspect", "check", str(grad_a), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["target_tf"] == SHIPPED[-1] and report["ready"]
    assert _by_check(report)["target_tf"]["message"] == (
        f"ops judged against TensorFlow {SHIPPED[-1]}, the newest tfship has a table for "
        "(no TensorFlow is installed here)"
    )
    result = _tfship_without_tensorflow(tmp_path, "inspect", "check", str(grad_a), "--target-tf", "2.15")
    assert result.returncode == 3, result.stderr
    assert "INFO     target_tf: ops judged against TensorFlow 2.15.1, the target named\n" in result.stdout
    newer = "ERROR    op_versions: TensorFlow 2.15.1 cannot run ops of a newer one: MatMul has attributes "
    assert newer in result.stdout
    result = _tfship_without_tensorflow(tmp_path, "inspect", "check", str(grad_a), "--target-tf", "2.16")
    assert (result.returncode, result.stderr) == (2, f"Error: {UNKNOWN.format('2.16')}\n")


def test_an_installed_tensorflow_whose_table_cannot_be_built_is_refused_not_misjudged(
    grad_a: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # metadata of a TensorFlow 2.99.0 whose module is missing: a broken install
    site = _site_without_tensorflow(tmp_path)
    dist_info = site / "tensorflow-2.99.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.99.0\n")
    result = _tfship_without_tensorflow(tmp_path, "inspect", "check", str(grad_a))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith(
        "Error: cannot judge against TensorFlow 2.99.0, the one installed here: tfship has tables for "
        "TensorFlow 2.15.1, 2.21.0 only, and building one from its op registry failed ("
    )
    assert result.stderr.endswith("); name one of those as the target\n")
    assert not (tmp_path / "cache").exists()
    result = _tfship_without_tensorflow(tmp_path, "inspect", "check", str(grad_a), "--target-tf", "2.21")
    assert result.returncode == 0, result.stderr


def test_a_table_that_does_not_know_its_stablehlo_makes_the_check_say_it_could_not_judge(
    tmp_path: pathlib.Path,
) -> None:
    # an installed TensorFlow 2.99.0 without a shipped table, whose kept table (built from its
    # registry) records no StableHLO version: its StableHLO bindings said none
    site = _site_without_tensorflow(tmp_path)
    dist_info = site / "tensorflow-2.99.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.99.0\n")
    table = json.loads(_shipped_tables()["2.21.0"])
    table.update(tensorflow="2.99.0", stablehlo_max_version=None)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "opdefs-2.99.0.json").write_text(json.dumps(table))
    export = str(NEWTF / "keras_jax_export" / "1")
    result = _tfship_without_tensorflow(tmp_path, "inspect", "check", export)
    assert result.returncode == 0, result.stderr
    assert (
        "WARNING  stablehlo: cannot judge the StableHLO of XlaCallModule (v1.18.0): tfship's table for "
        "this TensorFlow (2.99.0) does not record which StableHLO it deserializes; run it on that "
        "TensorFlow to find out\n"
    ) in result.stdout
    assert result.stdout.endswith(f"{export}: ready (0 errors, 1 warnings)\n")
    result = _tfship_without_tensorflow(tmp_path, "inspect", "check", export, "--strict")
    assert result.returncode == 3, result.stdout


@pytest.mark.slow
def test_an_installed_tensorflow_without_a_shipped_table_gets_one_from_its_registry_once(
    grad_a: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # tfship as installed, less the installed TensorFlow's table: a release newer than tfship
    package = tmp_path / "src" / "tfship"
    shutil.copytree(ROOT / "src" / "tfship", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "inspect" / f"opdefs-{INSTALLED}.json").unlink()
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src"), "TFSHIP_CACHE_DIR": str(cache)}

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tfship", "inspect", "check", str(grad_a), "--json", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)

    result = check()
    kept = cache / f"opdefs-{INSTALLED}.json"
    report = json.loads(result.stdout)
    assert report["target_tf"] == INSTALLED
    assert _by_check(report)["target_tf"]["message"] == (
        f"ops judged against TensorFlow {INSTALLED}, the one installed here (tfship ships no table "
        f"for it: built from its op registry, kept in {kept})"
    )
    assert kept.read_bytes() == _shipped_tables()[INSTALLED]  # the same table `make opdefs` writes
    assert (result.returncode == 0) == (INSTALLED == "2.21.0"), result.stdout

    # the kept table judges from now on: one without MatMul shows it was read, not rebuilt
    table = json.loads(kept.read_text())
    del table["ops"]["MatMul"]
    kept.write_text(json.dumps(table))
    report = json.loads(check().stdout)
    assert _by_check(report)["registered_ops"]["message"] == (
        f"ops this TensorFlow ({INSTALLED}) does not register (custom ops?): MatMul"
    )
    # a named target that the package ships a table for is judged by that table
    (other,) = (v for v in SHIPPED if v != INSTALLED)
    report = json.loads(check("--target-tf", other).stdout)
    assert (report["target_tf"], report["ready"]) == (other, other == "2.21.0")


# ------------------------------------------------------------------------------ running it here


def _answer(export: pathlib.Path) -> list[float]:
    from tfship.loaders import load

    with load(export) as model:
        return list(model.predict({"features": [[0.5, -1.0, 2.0, 0.25]]})["output_0"][0])


@pytest.mark.slow
def test_the_loader_judges_against_the_tensorflow_that_runs_the_model(
    grad_a: pathlib.Path, grad_defaults: pathlib.Path, newer_op: pathlib.Path
) -> None:
    from tfship.errors import ModelError

    outputs = json.loads((NEWTF / "expected.json").read_text())["models"]["keras_export"]["outputs"]
    expected = pytest.approx(outputs["serving_default"]["output_0"][0], abs=1e-6)
    assert _answer(grad_defaults) == expected  # the judgment agrees with TensorFlow, on each lane
    if INSTALLED == "2.21.0":
        assert _answer(grad_a) == expected and _answer(newer_op) == expected
        return
    with pytest.raises(
        ModelError,
        match=r"this TensorFlow \(2\.15\.1\) cannot run ops of a newer one: "
        "MatMul has attributes grad_a that it does not know",
    ):
        _answer(grad_a)
    with pytest.raises(ModelError, match="DecodeWebP"):  # TensorFlow's own refusal
        _answer(newer_op)
