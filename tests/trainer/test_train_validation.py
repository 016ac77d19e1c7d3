"""A training command that cannot succeed fails before it writes anything (or leaves nothing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tfship.data import infer_schema, penguins_split
from tfship.errors import SchemaError, TrainError
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
    schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"},
                               "features": [{"name": "x", "dtype": "float32"}],
                               "groups": {"user": ["x"]}})
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
        train(schema, model_dir, [str(train_csv)], [str(eval_csv)], model=ModelOptions("linear"),
              run=RunOptions(max_steps=5, exports=()))
    assert not model_dir.exists()
