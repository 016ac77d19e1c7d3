"""Training never damages a model directory: another model's directory is refused before any
write, and a finished one says so instead of reporting old exports as new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.data import infer_schema, penguins_split

pytestmark = pytest.mark.slow


def _train(schema: Path, data: tuple[Path, Path], model_dir: Path, *extra: str) -> object:
    return CliRunner().invoke(
        cli,
        [
            "train",
            "--schema",
            str(schema),
            "--train",
            str(data[0]),
            "--eval",
            str(data[1]),
            "--model-dir",
            str(model_dir),
            "--model",
            "linear",
            "--export",
            "final",
            *extra,
        ],
    )


def test_another_schema_is_refused_and_the_directory_kept(tmp_path: Path) -> None:
    data = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(data[0], "species").save(schema)
    first = _train(schema, data, tmp_path / "m", "--max-steps", "5")
    assert first.exit_code == 0, first.output  # type: ignore[attr-defined]
    recorded = (tmp_path / "m" / "trainer.json").read_text()
    other = tmp_path / "other.json"
    infer_schema(data[0], "species", exclude=["year"]).save(other)
    refused = _train(other, data, tmp_path / "m", "--max-steps", "10")
    assert refused.exit_code == 2  # type: ignore[attr-defined]
    assert refused.stderr.startswith(  # type: ignore[attr-defined]
        f"Error: model directory {tmp_path / 'm'} holds a model trained with another schema or model"
    )
    assert (tmp_path / "m" / "trainer.json").read_text() == recorded
    exported = CliRunner().invoke(
        cli, ["export", "--model-dir", str(tmp_path / "m"), "--out", str(tmp_path / "out"), "--json"]
    )
    assert exported.exit_code == 0, exported.output


def test_a_finished_model_says_so_and_lists_no_old_exports(tmp_path: Path) -> None:
    data = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(data[0], "species").save(schema)
    assert _train(schema, data, tmp_path / "m", "--max-steps", "5").exit_code == 0  # type: ignore[attr-defined]
    again = _train(schema, data, tmp_path / "m", "--max-steps", "5")
    assert again.exit_code == 0  # type: ignore[attr-defined]
    assert again.stdout.startswith("model already at step 5; raise --max-steps to continue\n")  # type: ignore[attr-defined]
    assert "export " not in again.stdout  # type: ignore[attr-defined]
    as_json = json.loads(_train(schema, data, tmp_path / "m", "--max-steps", "5", "--json").stdout)  # type: ignore[attr-defined]
    assert as_json["exports"] == {} and as_json["global_step"] == 5


@pytest.mark.estimator  # it trains
def test_the_receiver_is_recorded_and_another_one_continues_the_model(tmp_path: Path) -> None:
    # the receiver shapes the exports, not the checkpoints: continuing with another is no other model
    data = penguins_split(tmp_path / "data")
    schema = tmp_path / "schema.json"
    infer_schema(data[0], "species").save(schema)
    first = _train(schema, data, tmp_path / "m", "--max-steps", "5", "--receiver", "parsing")
    assert first.exit_code == 0, first.output  # type: ignore[attr-defined]
    assert json.loads((tmp_path / "m" / "trainer.json").read_text())["receiver"] == "parsing"
    again = _train(schema, data, tmp_path / "m", "--max-steps", "10")
    assert again.exit_code == 0, again.output  # type: ignore[attr-defined]
    assert json.loads((tmp_path / "m" / "trainer.json").read_text())["receiver"] == "both"
