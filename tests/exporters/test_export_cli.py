"""``tfship export`` through click's CliRunner, on a model dir the trainer wrote."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from export_helpers import numeric_dirs, saved_signatures

from tfship.cli import cli
from tfship.exporters import read_eval_history

pytestmark = pytest.mark.slow


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)


def test_export_newest_checkpoint_as_json(trained_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "serving"
    result = _run(
        [
            "--model-dir",
            str(trained_dir / "model"),
            "--schema",
            str(trained_dir / "schema.json"),
            "--receiver",
            "both",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["global_step"] == 10 and data["verified"] is True
    assert data["metrics"]["global_step"] == 10 and "loss" in data["metrics"]  # its evaluation
    assert numeric_dirs(out) == [str(data["version"])]
    sigs = saved_signatures(out / str(data["version"]))
    assert {"serving_default", "predict", "raw:predict"} <= set(sigs)
    assert sorted(sigs["raw:predict"].inputs) == ["color", "tags", "x"]


def test_export_best_by_metric_with_warmup_and_schema_from_model_dir(
    trained_dir: Path, tmp_path: Path
) -> None:
    warmup = tmp_path / "warmup.jsonl"
    warmup.write_text('{"x": 0.5, "color": "g", "tags": ["a"]}\n{"x": -1, "color": "b"}\n')
    out = tmp_path / "serving"
    result = _run(
        [
            "--model-dir",
            str(trained_dir / "model"),
            "--receiver",
            "raw",
            "--out",
            str(out),
            "--best-by",
            "loss:min",
            "--warmup",
            str(warmup.with_suffix(".csv")),
        ]
    )
    assert result.exit_code == 2 and "warmup file" in result.stderr and "does not exist" in result.stderr
    result = _run(
        [
            "--model-dir",
            str(trained_dir / "model"),
            "--receiver",
            "parsing",
            "--out",
            str(out),
            "--best-by",
            "loss:min",
            "--warmup",
            str(warmup),
        ]
    )
    assert result.exit_code == 0, result.output
    assert "verified    yes, 2 warmup requests replayed" in result.stdout
    assert "signature   serving_default" in result.stdout
    (version,) = numeric_dirs(out)
    meta = json.loads((out / version / "assets.extra" / "tfship.json").read_text())
    assert meta["exporter"]["best_by"] == ["loss", "min"]
    history = read_eval_history(trained_dir / "model")
    assert meta["metrics"]["loss"] == min(r.metrics["loss"] for r in history)
    assert meta["schema"]["label"]["name"] == "y"


def test_cli_errors_are_one_line(trained_dir: Path, tmp_path: Path) -> None:
    base = ["--model-dir", str(trained_dir / "model"), "--out", str(tmp_path / "o")]
    result = _run([*base, "--best-by", "nope:max"])
    assert result.exit_code == 2  # the metric is the user's choice: bad input
    assert result.stderr.startswith("Error: metric 'nope' not found") and "loss" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = _run([*base, "--checkpoint", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "checkpoint" in result.stderr
    result = _run([*base, "--best-by", "loss:up"])
    assert result.exit_code == 2 and "METRIC:MODE" in result.stderr
    result = _run([*base, "--best-by", "loss:min", "--checkpoint", "x"])
    assert result.exit_code == 2 and "exclusive" in result.stderr


def test_bad_input_exits_2_and_names_the_flag(trained_dir: Path, tmp_path: Path) -> None:
    missing = _run(["--model-dir", str(tmp_path / "nope" / "model"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 2
    assert missing.stderr == f"Error: --model-dir {tmp_path / 'nope' / 'model'}: no such model directory\n"
    metric = _run(
        ["--model-dir", str(trained_dir / "model"), "--best-by", "nope:max", "--out", str(tmp_path / "o")]
    )
    assert metric.exit_code == 2
    assert "metric 'nope' not found" in metric.stderr
    assert not (tmp_path / "o").exists() or not numeric_dirs(tmp_path / "o")


def _interrupt_export(trained_dir: Path, out: Path, when: Any) -> tuple[int, str, str]:
    import os
    import signal
    import subprocess
    import sys
    import time

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfship",
            "export",
            "--model-dir",
            str(trained_dir / "model"),
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if "proxy" not in k.lower()},
    )
    deadline = time.monotonic() + 120
    while not when() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    stdout, err = process.communicate(timeout=120)
    return process.returncode, stdout, err


@pytest.mark.parametrize("moment", ["while importing", "while staging"])
def test_ctrl_c_stops_export_and_publishes_nothing(trained_dir: Path, tmp_path: Path, moment: str) -> None:
    import signal
    import time

    out = tmp_path / "serving"
    started = time.monotonic()

    def when() -> bool:
        if moment == "while importing":
            return time.monotonic() - started > 1.0
        return out.is_dir() and any(p.name.startswith(".") for p in out.iterdir())

    code, _, err = _interrupt_export(trained_dir, out, when)
    # 130 once the command runs; click's own "Aborted!" (exit 1) if it was still parsing. A
    # Ctrl-C that lands inside TensorFlow's import can, under `python -m`, end the process by
    # SIGINT itself after "Aborted!" (CPython re-raises the signal at exit when it saw the
    # KeyboardInterrupt pass a string exec); a shell reports that as 130 too.
    interrupted = (130, -signal.SIGINT)
    assert code in interrupted if moment == "while staging" else code in (*interrupted, 1), (code, err)
    assert err.strip().splitlines()[-1] == "Aborted!"
    assert "Traceback" not in err
    assert not out.exists() or list(out.iterdir()) == []


def test_ctrl_c_after_publishing_finishes_and_exits_0(trained_dir: Path, tmp_path: Path) -> None:
    # The version is live the moment its directory has its number: from then on a Ctrl-C
    # cannot undo the export, and reporting failure (130) would be false.
    out = tmp_path / "serving"
    code, stdout, err = _interrupt_export(trained_dir, out, lambda: bool(numeric_dirs(out)))
    published = numeric_dirs(out)
    assert published, (code, err)
    assert code == 0, (code, err)
    assert f"version     {published[0]}" in stdout
    assert "Aborted!" not in err and "Traceback" not in err


def test_a_custom_estimators_model_dir_is_refused_in_one_line(
    classifier: Any, trained_dir: Path, tmp_path: Path
) -> None:
    # a model_fn of one's own cannot be rebuilt from a directory: say what is supported
    for extra in ([], ["--schema", str(trained_dir / "schema.json")]):
        result = _run(["--model-dir", classifier.model_dir, "--out", str(tmp_path / "o"), *extra])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"Error: --model-dir {classifier.model_dir} has no trainer.json: tfship export rebuilds "
            "only models trained by tfship train; for an Estimator with your own model_fn, export "
            "from Python with tfship.exporters.export_model(estimator, out, receiver) or the exporters\n"
        )
    assert not (tmp_path / "o").exists()


def test_a_checkpoint_of_another_model_names_the_missing_variable(trained_dir: Path, tmp_path: Path) -> None:
    import shutil

    model_dir = tmp_path / "model"
    shutil.copytree(trained_dir / "model", model_dir)
    recorded = json.loads((model_dir / "trainer.json").read_text())
    recorded["model"]["kind"] = "dnn"  # as if trainer.json and the checkpoints disagreed
    (model_dir / "trainer.json").write_text(json.dumps(recorded))
    result = _run(["--model-dir", str(model_dir), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert re.fullmatch(
        f"Error: checkpoint {re.escape(str(model_dir))}/model.ckpt-10 does not hold the variables "
        r"the model needs \(Key dnn/\S+ not found in checkpoint\): it was written by another model\n",
        result.stderr,
    ), result.stderr
    assert not numeric_dirs(tmp_path / "o")


@pytest.mark.estimator  # it exports
def test_a_re_export_has_the_signatures_of_the_trainers_exports(
    tiny_model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # training recorded its receiver (both, train's default): export gives the same signatures
    # without being told, so promote does not refuse the re-export for a removed signature
    caplog.set_level(logging.INFO, logger="tfship.exporters")
    recorded = json.loads((tiny_model.model_dir / "trainer.json").read_text())
    assert recorded["receiver"] == "both"
    out = tmp_path / "serving"
    result = _run(["--model-dir", str(tiny_model.model_dir), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    version = out / str(json.loads(result.stdout)["version"])
    assert set(saved_signatures(version)) == set(saved_signatures(tiny_model.export("final")))
    assert "raw:predict" in saved_signatures(version)
    assert f"receiver both, as training recorded in {tiny_model.model_dir / 'trainer.json'}" in caplog.text


@pytest.mark.estimator  # it exports
def test_a_model_dir_without_a_recorded_receiver_exports_parsing_and_says_so(
    tiny_model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import shutil

    caplog.set_level(logging.INFO, logger="tfship.exporters")
    model_dir = Path(shutil.copytree(tiny_model.model_dir, tmp_path / "model"))
    recorded = json.loads((model_dir / "trainer.json").read_text())
    del recorded["receiver"]  # as a model dir trained before the receiver was recorded
    (model_dir / "trainer.json").write_text(json.dumps(recorded))
    out = tmp_path / "serving"
    result = _run(["--model-dir", str(model_dir), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    sigs = saved_signatures(out / str(json.loads(result.stdout)["version"]))
    assert "raw:predict" not in sigs and list(sigs["predict"].inputs) == ["examples"]
    assert f"receiver parsing: {model_dir / 'trainer.json'} records none" in caplog.text
    # an explicit receiver still wins over the record
    result = _run(
        ["--model-dir", str(tiny_model.model_dir), "--out", str(out), "--receiver", "raw", "--json"]
    )
    assert result.exit_code == 0, result.output
    sigs = saved_signatures(out / str(json.loads(result.stdout)["version"]))
    assert "raw:predict" not in sigs and "examples" not in sigs["predict"].inputs
