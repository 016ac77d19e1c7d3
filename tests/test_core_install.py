"""``pip install <checkout>`` and nothing else: the core, without TensorFlow.

The core is installed, as a user installs it, into a venv of its own on the newest Python here
(3.13, else 3.12, else this one), once with protobuf's newest 6.x and once with 3.20.x; no TensorFlow, Keras,
JAX or TF Serving package is importable there. Its ``tfship`` then inspects real exports and
calls a real server (``tfship serve``'s ``ModelServer``, run by this, the full, install) over
gRPC and REST; each answer must equal the full install's own for the same command. What needs
the ``tf`` extra fails there in one line naming it.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from venvs import NEWEST, PROTOBUFS, ROOT, clean_env, core_venv

pytestmark = [pytest.mark.slow, pytest.mark.core]

EXTRA_LINE = "needs the 'run' extra (TensorFlow is not installed): pip install \"tfship[run]\""
# what trains or exports needs tf.estimator: the estimator extra, on the Pythons that install it
ESTIMATOR_LINE = (
    "needs the 'estimator' extra (TensorFlow is not installed): pip install \"tfship[estimator]\""
    + ("" if NEWEST in ("3.9", "3.10", "3.11") else f" on Python 3.9-3.11 (this is Python {NEWEST})")
)
NEEDS_ESTIMATOR = {"train", "export", "demo", "cluster", "trainer"}


@pytest.fixture(scope="module", params=list(PROTOBUFS), ids=lambda p: f"protobuf{p}")
def core(request: pytest.FixtureRequest) -> Path:
    return core_venv(request.param)


def run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``tfship ARGS`` of the core venv, from a directory outside the checkout."""
    return subprocess.run(
        [str(venv / "bin" / "tfship"), *args],
        capture_output=True,
        text=True,
        env=clean_env(COLUMNS="80"),
        cwd=cwd,
        timeout=120,
    )


def full(*args: str) -> Any:
    """The same command in this, the full, install."""
    return CliRunner().invoke(cli, list(args), prog_name="tfship", terminal_width=80)


PROBE = """
import importlib.util, json, sys
import google.protobuf, tfship
names = ["tensorflow", "tensorflow_serving", "tensorflow_estimator", "keras", "tf_keras", "jax",
         "pandas", "pyarrow", "apache_beam"]
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "protobuf": google.protobuf.__version__,
    "tfship": tfship.__file__,
    "importable": [name for name in names if importlib.util.find_spec(name) is not None],
}))
"""


def test_the_core_has_no_tensorflow(core: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(core / "bin" / "python"), "-c", PROBE],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["python"] == NEWEST
    assert report["importable"] == []
    assert report["protobuf"].startswith("3.20." if "3.20" in core.name else "6.")
    assert Path(report["tfship"]).is_relative_to(core)  # the installed package, not the checkout
    tried = subprocess.run(
        [str(core / "bin" / "python"), "-c", "import tensorflow"],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert tried.returncode == 1
    assert tried.stderr.splitlines()[-1] == "ModuleNotFoundError: No module named 'tensorflow'"


BFLOAT16 = """
import numpy as np
from tfship.serve_client import decode_tensor, encode_tensor
import ml_dtypes
sent = encode_tensor(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16))
back = decode_tensor(sent)
theirs = type(sent)(dtype=14, half_val=[16320, 49152])  # as TF Serving writes it: 16-bit patterns
theirs.tensor_shape.dim.add(size=2)
print(sent.dtype, back.dtype, back.tolist(), decode_tensor(theirs).tolist())
"""


def test_the_core_decodes_bfloat16_tensors(core: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(core / "bin" / "python"), "-c", BFLOAT16],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "14 bfloat16 [1.5, -2.0] [1.5, -2.0]\n"


def test_help_lists_every_command(core: Path, tmp_path: Path) -> None:
    done = run(core, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == full("--help").output.split()  # the same words, wrapped by the terminal


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--help"],
        ["serve", "--model_base_path", "m"],
        ["export", "x", "y"],
        ["demo"],
        ["predict", "m", "f.csv"],
        ["bench", "m"],
        ["cluster", "--help"],
    ],
    ids=lambda args: args[0],
)
def test_a_command_needing_the_extra_fails_in_one_line(core: Path, tmp_path: Path, args: list[str]) -> None:
    done = run(core, *args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    line = ESTIMATOR_LINE if args[0] in NEEDS_ESTIMATOR else EXTRA_LINE
    assert done.stderr == f"Error: tfship {args[0]} {line}\n"


def test_the_other_extra_needs_fail_in_one_line(core: Path, tmp_path: Path) -> None:
    export = ROOT / "tests" / "fixtures" / "newtf" / "multi_output" / "1"
    done = run(core, "inspect", "check", str(export), "--run", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"Error: --run (it loads the model) {EXTRA_LINE}\n"
    done = run(core, "data", "penguins", "--out", "data", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "Error: the penguins data set needs the 'run' extra (palmerpenguins is not installed): "
        'pip install "tfship[run]"\n'
    )
    assert not (tmp_path / "data").exists()  # nothing was written


def test_schema_and_synthetic_data_need_no_extra(core: Path, tiny_model: Any, tmp_path: Path) -> None:
    infer = ["schema", "infer", str(tiny_model.train_csv), "--label", "species"]
    done = run(core, *infer, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(full(*infer).stdout)
    out = tmp_path / "synth.csv"
    synth = ["data", "synth", "--schema", str(tiny_model.schema_path), "--rows", "5", "-o", str(out)]
    done = run(core, *synth, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{out}\n", "")
    theirs = out.read_text()
    assert full(*synth).exit_code == 0
    assert theirs == out.read_text()  # the same rows from the same seed


@pytest.mark.parametrize("package", ["trainer", "exporters", "loaders", "server", "promote"])
def test_importing_a_package_needing_the_extra_says_so(core: Path, tmp_path: Path, package: str) -> None:
    code = (
        "import tfship.errors\n"
        f"try:\n    import tfship.{package}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, isinstance(exc, tfship.errors.TfshipError), exc)\n"
    )
    done = subprocess.run(
        [str(core / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    line = ESTIMATOR_LINE if package in NEEDS_ESTIMATOR else EXTRA_LINE
    assert done.stdout == f"ExtraNotInstalledError True tfship.{package} {line}\n"


def test_inspect_reads_real_exports_as_the_full_install_does(
    core: Path, tiny_model: Any, tmp_path: Path
) -> None:
    best, latest = str(tiny_model.export("best")), str(tiny_model.export("latest"))
    newer = ROOT / "tests" / "fixtures" / "newtf"
    # the core has no TensorFlow to judge ops by: both name the full install's
    target = ["--target-tf", version("tensorflow")]
    commands = [
        (["inspect", "show", best, "--all"], 0),
        (["inspect", "show", str(newer / "keras_export" / "1"), "--all"], 0),
        (["inspect", "check", best, "--json", *target], 0),
        (["inspect", "check", str(newer / "keras_jax_export" / "1"), *target], 3),
        (["inspect", "versions", str(Path(best).parent)], 0),
        (["inspect", "diff", best, latest], 0),
        (["inspect", "diff", str(newer / "multi_output" / "1"), str(newer / "keras_export" / "1")], 3),
        (["inspect", "request", best, "--format", "curl"], 0),
    ]
    for args, code in commands:
        done = run(core, *args, cwd=tmp_path)
        assert done.returncode == code, (args, done.stderr)
        ours = full(*args)
        assert ours.exit_code == code, (args, ours.output)
        assert done.stdout.strip(), args
        assert done.stdout == ours.stdout, args


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_client_calls_a_real_server_as_the_full_install_does(
    core: Path, tiny_model: Any, penguins: Any, tmp_path: Path, transport: str
) -> None:
    with open(tiny_model.eval_csv, newline="") as handle:
        rows = [row for row, _ in zip(csv.DictReader(handle), range(3))]
    records = tmp_path / "records.csv"
    with open(records, "w", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=[name for name in rows[0] if name != "species"], extrasaction="ignore"
        )
        writer.writeheader()
        writer.writerows(rows)
    server = ["-s", penguins.address] if transport == "grpc" else ["-s", penguins.rest_url, "--rest"]
    schema = ["--schema", str(tiny_model.schema_path)]
    commands = [
        ["client", "status", *server, "-m", "penguins"],
        ["client", "metadata", *server, "-m", "penguins", "-k", "serving_default"],
        ["client", "classify", *server, "-m", "penguins", "-i", str(records), *schema],
        ["client", "predict", *server, "-m", "penguins", "-k", "predict", "-i", str(records), *schema],
        [
            "client",
            "predict",
            *server,
            "-m",
            "penguins",
            "-k",
            "raw:predict",
            "-i",
            str(records),
            *schema,
            "-o",
            "probabilities",
            "--json",
        ],
    ]
    for args in commands:
        done = run(core, *args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
        ours = full(*args)
        assert ours.exit_code == 0, (args, ours.output)
        assert done.stdout.strip(), args
        assert done.stdout == ours.stdout, args
    missing = ["client", "status", *server, "-m", "swans"]
    done = run(core, *missing, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (full(*missing).exit_code, "")
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr


def test_the_install_benchmark_measures_both_installs(tmp_path: Path) -> None:
    core_venv("6")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "install.py"), "--short"],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith(f"core (Python {NEWEST})") and lines[2].startswith("full (this venv)")
    sizes = [float(line.split()[-4]) for line in lines[1:3]]
    ratio = float(lines[3].split()[4])
    assert 0 < ratio == pytest.approx(sizes[0] / sizes[1], abs=1e-3)
    assert lines[3].endswith("(target <= 0.1: met)") and ratio <= 0.1
