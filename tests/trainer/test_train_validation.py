"""A training command that cannot succeed fails before it writes anything (or leaves nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tfship.data import infer_schema, penguins_split
from tfship.errors import InputError, SchemaError, TrainError
from tfship.schema import Schema
from tfship.trainer import ModelOptions, RunOptions, train

pytestmark = pytest.mark.slow


def test_two_tower_without_groups_is_refused_before_tensorflow_loads(tmp_path: Path) -> None:
    train_csv, eval_csv = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train_csv, "species").save(schema)
    model_dir = tmp_path / "model"
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from tfship.cli import cli\n"
        f"r = CliRunner().invoke(cli, ['train', '--schema', {str(schema)!r}, '--train', {str(train_csv)!r},"
        f" '--eval', {str(eval_csv)!r}, '--model-dir', {str(model_dir)!r}, '--model', 'two_tower'])\n"
        "print(r.exit_code, 'tensorflow' in sys.modules)\n"
        "print(r.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, message = out.stdout.split("\n", 1)
    assert status == "2 False"
    assert message.startswith("Error: the two_tower model scores pairs: it needs a binary label")
    assert not model_dir.exists()


def test_two_tower_without_its_groups_names_them(tmp_path: Path) -> None:
    schema = Schema.from_dict(
        {
            "label": {"name": "y", "kind": "binary"},
            "features": [{"name": "x", "dtype": "float32"}],
            "groups": {"user": ["x"]},
        }
    )
    expected = r"needs feature groups 'user' and 'item' .*missing or empty: 'item'"
    with pytest.raises(SchemaError, match=expected):
        ModelOptions("two_tower").check(schema)
    with pytest.raises(ValueError, match="unknown export kinds"):
        RunOptions(exports=("best", "newest"))


def test_a_run_that_fails_before_training_a_step_leaves_no_model_directory(tmp_path: Path) -> None:
    train_csv, eval_csv = penguins_split(tmp_path / "data")
    schema = infer_schema(train_csv, "species")
    lines = train_csv.read_text().splitlines()
    cells = lines[1].split(",")
    cells[2] = "forty"  # bill_length_mm: TensorFlow's CSV parsing fails on it
    lines[1:] = [",".join(cells)] * 40
    train_csv.write_text("\n".join(lines) + "\n")
    model_dir = tmp_path / "model"
    with pytest.raises(TrainError, match="training failed on bad input"):
        train(
            schema,
            model_dir,
            [str(train_csv)],
            [str(eval_csv)],
            model=ModelOptions("linear"),
            run=RunOptions(max_steps=5, exports=()),
        )
    assert not model_dir.exists()


def _cli_train(schema: Path, train_csv: Path, eval_csv: Path, model_dir: Path, *extra: str) -> Any:
    from click.testing import CliRunner

    from tfship.cli import cli

    return CliRunner().invoke(
        cli,
        [
            "train",
            "--schema",
            str(schema),
            "--train",
            str(train_csv),
            "--eval",
            str(eval_csv),
            "--model-dir",
            str(model_dir),
            "--model",
            "linear",
            "--export",
            "",
            *extra,
        ],
    )


def test_a_resumed_run_says_how_many_steps_it_trained(tmp_path: Path) -> None:
    train_csv, eval_csv = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(train_csv, "species").save(schema)
    first = _cli_train(schema, train_csv, eval_csv, tmp_path / "m", "--max-steps", "5")
    assert first.exit_code == 0 and first.stdout.startswith("trained 5 steps in "), first.output
    resumed = _cli_train(schema, train_csv, eval_csv, tmp_path / "m", "--max-steps", "8")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.startswith("trained 3 steps (5 -> 8) in "), resumed.stdout
    as_json = _cli_train(schema, train_csv, eval_csv, tmp_path / "m", "--max-steps", "10", "--json")
    summary = json.loads(as_json.stdout)
    assert (summary["start_step"], summary["global_step"]) == (8, 10)


def test_another_models_directory_names_the_label_first(tiny_model: Any) -> None:
    recorded = tiny_model.schema.to_dict()
    recorded["label"]["vocabulary"] = ["Adelie", "Gentoo"]
    other = Schema.from_dict(recorded)
    before = sorted(p.name for p in tiny_model.model_dir.iterdir())
    with pytest.raises(InputError, match=r"another schema or model \(schema\.label\.vocabulary: recorded"):
        train(
            other,
            tiny_model.model_dir,
            [str(tiny_model.train_csv)],
            [str(tiny_model.eval_csv)],
            model=ModelOptions("dnn", hidden_units=(8,), batch_norm=True),
            run=RunOptions(max_steps=90),
        )
    dropped = Schema.from_dict(
        {**tiny_model.schema.to_dict(), "features": tiny_model.schema.to_dict()["features"][:-1]}
    )
    with pytest.raises(InputError, match=r"\(schema\.features\.year: only in the recorded one\)"):
        train(
            dropped,
            tiny_model.model_dir,
            [str(tiny_model.train_csv)],
            [str(tiny_model.eval_csv)],
            model=ModelOptions("dnn", hidden_units=(8,), batch_norm=True),
            run=RunOptions(max_steps=90),
        )
    assert sorted(p.name for p in tiny_model.model_dir.iterdir()) == before


def test_the_chief_of_a_hand_made_cluster_reports_what_it_trained(tiny_model: Any, tmp_path: Path) -> None:
    import os
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = {"cluster": {"chief": [f"127.0.0.1:{port}"]}, "task": {"type": "chief", "index": 0}}
    env = {**os.environ, "TF_CONFIG": json.dumps(config)}
    args = [
        sys.executable,
        "-m",
        "tfship",
        "train",
        "--schema",
        str(tiny_model.schema_path),
        "--train",
        str(tiny_model.train_csv),
        "--eval",
        str(tiny_model.eval_csv),
        "--model-dir",
        str(tmp_path / "m"),
        "--hidden-units",
        "8",
        "--max-steps",
        "10",
        "--export",
        "",
    ]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("chief 0: trained 10 steps in "), done.stdout
    assert "already" not in done.stdout
