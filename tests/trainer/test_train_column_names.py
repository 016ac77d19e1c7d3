"""Any CSV header trains, exports and serves: the graph uses sanitised names, signatures the user's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.errors import SchemaError
from tfship.loaders import load
from tfship.schema import Schema
from tfship.trainer import build_columns

pytestmark = pytest.mark.slow

HEADER = ["mean radius", "od280/od315 of wines", "_id", "kind", "diagnosis"]


def _write(path: Path, rows: int, offset: int = 0) -> Path:
    lines = [",".join(HEADER)]
    for i in range(offset, offset + rows):
        lines.append(f"{10 + i % 7},{(i % 5) / 2},{i},{'ab'[i % 2]},{'yes' if i % 7 > 3 else 'no'}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_odd_column_names_train_export_and_predict(tmp_path: Path) -> None:
    train, evaluation = _write(tmp_path / "t.csv", 60), _write(tmp_path / "e.csv", 20, 60)
    runner = CliRunner()
    inferred = runner.invoke(
        cli,
        [
            "schema",
            "infer",
            str(train),
            "--label",
            "diagnosis",
            "--keep",
            "_id",
            "--out",
            str(tmp_path / "s.json"),
        ],
    )  # a row number
    assert inferred.exit_code == 0, inferred.output
    trained = runner.invoke(
        cli,
        [
            "train",
            "--schema",
            str(tmp_path / "s.json"),
            "--train",
            str(train),
            "--eval",
            str(evaluation),
            "--model-dir",
            str(tmp_path / "m"),
            "--model",
            "linear",
            "--max-steps",
            "5",
            "--export",
            "final",
            "--json",
        ],
    )
    assert trained.exit_code == 0, trained.output
    export = json.loads(trained.stdout)["exports"]["final"][0]
    row = {"mean radius": 12.0, "od280/od315 of wines": 1.5, "_id": 3, "kind": "a"}
    with load(export) as model:
        assert set(model.signatures["raw:predict"].inputs) == set(HEADER[:-1])  # the user's names
        raw = model.predict([row], signature="raw:predict")
        parsed = model.predict([row], signature="predict")
    assert raw["probabilities"][0].tolist() == pytest.approx(parsed["probabilities"][0].tolist())


def test_names_that_become_one_graph_name_are_refused() -> None:
    schema = Schema.from_dict(
        {
            "label": {"name": "y", "kind": "binary"},
            "features": [{"name": "a b", "dtype": "float32"}, {"name": "a_b", "dtype": "float32"}],
        }
    )
    with pytest.raises(SchemaError, match="features 'a b' and 'a_b' both become 'a_b'"):
        build_columns(schema)
