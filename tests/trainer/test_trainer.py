"""The trainer: every model kind and head trains, checkpoints, logs events and exports a
SavedModel whose predictions match ``estimator.predict`` on the same rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.data import synthesize
from tfship.errors import DataError, SchemaError
from tfship.records import BySchema, to_example
from tfship.schema import CsvMissing, Schema
from tfship.trainer import InputOptions, ModelOptions, RunOptions, build_estimator, build_input_fn, train

pytestmark = pytest.mark.slow


def _eval_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _export_predict(export_dir: Path, schema: Schema, rows: list[dict[str, str]]) -> dict[str, Any]:
    import tensorflow as tf

    loaded = tf.saved_model.load(str(export_dir))
    examples = [
        to_example(r, BySchema(schema, csv=CsvMissing()), where=f"row {i}").SerializeToString()
        for i, r in enumerate(rows)
    ]
    out = loaded.signatures["predict"](examples=tf.constant(examples))
    return {k: v.numpy() for k, v in out.items()}


def _estimator_predict(model_dir: Path, schema: Schema, eval_csv: Path) -> list[dict[str, Any]]:
    est = build_estimator(None, model_dir)
    input_fn = build_input_fn(schema, [str(eval_csv)], InputOptions(batch_size=16, epochs=1), training=False)
    return list(est.predict(lambda: input_fn().map(lambda f, _: f)))


def test_tiny_model_checkpoints_events_and_exports(tiny_model: Any) -> None:
    model_dir = tiny_model.model_dir
    assert (model_dir / "checkpoint").exists()
    assert list(model_dir.glob("model.ckpt-60.index"))
    assert list(model_dir.glob("events.out.tfevents.*")), "no training events for TensorBoard"
    assert list((model_dir / "eval").glob("events.out.tfevents.*")), "no eval events"
    assert set(tiny_model.result.exports) == {"best", "latest", "final"}
    for kind in ("best", "latest", "final"):
        assert (tiny_model.export(kind) / "saved_model.pb").exists()
    assert tiny_model.result.global_step == 60
    assert {"accuracy", "average_loss", "loss"} <= set(tiny_model.result.metrics)
    recorded = json.loads((model_dir / "trainer.json").read_text())
    assert recorded["schema"] == tiny_model.schema.to_dict()


def test_export_predictions_match_estimator_predict(tiny_model: Any) -> None:
    schema = tiny_model.schema
    rows = _eval_rows(tiny_model.eval_csv)
    exported = _export_predict(tiny_model.export("final"), schema, rows)
    expected = _estimator_predict(tiny_model.model_dir, schema, tiny_model.eval_csv)
    assert len(expected) == len(rows) == 68
    probabilities = np.stack([p["probabilities"] for p in expected])
    np.testing.assert_allclose(exported["probabilities"], probabilities, rtol=1e-5, atol=1e-6)
    assert exported["probabilities"].shape == (68, 3)


def _synthetic(tmp_path: Path, schema_dict: dict[str, Any], rows: int = 400) -> tuple[Schema, Path, Path]:
    schema = Schema.from_dict(schema_dict)
    train_csv = synthesize(schema, rows, tmp_path / "train.csv", seed=1)
    eval_csv = synthesize(schema, rows // 4, tmp_path / "eval.csv", seed=2)
    return schema, train_csv, eval_csv


FEATURES = [
    {
        "name": "age",
        "dtype": "float32",
        "default": 30.0,
        "use": {"kind": "numeric", "normalize": {"mean": 30.0, "std": 10.0}},
    },
    {"name": "visits", "dtype": "int64", "use": {"kind": "bucketized", "boundaries": [0, 5, 10]}},
    {
        "name": "country",
        "dtype": "string",
        "default": "",
        "use": {"kind": "categorical", "vocabulary": ["de", "fr", "us"], "as": "embedding", "dimension": 2},
    },
    {"name": "item", "dtype": "int64", "use": {"kind": "identity", "num_buckets": 20}},
    {"name": "city", "dtype": "string", "use": {"kind": "hash", "buckets": 32}},
]


@pytest.mark.parametrize(
    ("label", "kind", "metric"),
    [
        ({"name": "clicked", "kind": "binary"}, "linear", "auc"),
        ({"name": "spend", "kind": "regression"}, "dnn", "average_loss"),
        ({"name": "tier", "kind": "multiclass", "vocabulary": ["lo", "mid", "hi"]}, "dnn", "accuracy"),
        ({"name": "clicked", "kind": "binary", "vocabulary": ["no", "yes"]}, "two_tower", "auc"),
    ],
)
def test_every_model_kind_and_head_trains_and_exports(
    tmp_path: Path, label: dict[str, Any], kind: str, metric: str
) -> None:
    schema_dict = {
        "label": label,
        "features": FEATURES,
        "crosses": [{"features": ["country", "visits"], "hash_buckets": 8}],
        "groups": {"user": ["age", "country", "city"], "item": ["visits", "item"]},
    }
    schema, train_csv, eval_csv = _synthetic(tmp_path, schema_dict)
    result = train(
        schema,
        tmp_path / "m",
        [str(train_csv)],
        [str(eval_csv)],
        model=ModelOptions(kind, hidden_units=(8,), batch_norm=kind == "dnn", dropout=0.1),
        run=RunOptions(max_steps=20, checkpoint_every=20, exports=("final",)),
    )
    assert metric in result.metrics and np.isfinite(result.metrics[metric])
    export = Path(result.exports["final"][0])
    rows = _eval_rows(eval_csv)[:10]
    out = _export_predict(export, schema, rows)
    key = "predictions" if label["kind"] == "regression" else "probabilities"
    assert out[key].shape[0] == 10 and np.isfinite(out[key]).all()


def test_two_tower_needs_groups_and_a_binary_label(tmp_path: Path) -> None:
    schema, train_csv, eval_csv = _synthetic(
        tmp_path, {"label": {"name": "clicked", "kind": "binary"}, "features": FEATURES}, rows=40
    )
    with pytest.raises(SchemaError, match=r"needs feature groups 'user' and 'item'"):
        train(
            schema,
            tmp_path / "m",
            [str(train_csv)],
            [str(eval_csv)],
            model=ModelOptions("two_tower"),
            run=RunOptions(max_steps=2, exports=()),
        )


def test_same_seed_gives_same_metrics(tiny_model: Any, tmp_path: Path) -> None:
    def run(name: str) -> dict[str, float]:
        return train(
            tiny_model.schema,
            tmp_path / name,
            [str(tiny_model.train_csv)],
            [str(tiny_model.eval_csv)],
            model=ModelOptions("dnn", hidden_units=(4,), dropout=0.2),
            run=RunOptions(max_steps=15, checkpoint_every=15, exports=()),
        ).metrics

    assert run("a") == run("b")


def test_tfrecord_input_and_warm_start(tiny_model: Any, tmp_path: Path) -> None:
    import tensorflow as tf

    schema = tiny_model.schema
    records = tmp_path / "train.tfrecord"
    with tf.io.TFRecordWriter(str(records)) as writer:
        for row in _eval_rows(tiny_model.train_csv):
            writer.write(to_example(row, BySchema(schema, label=True, csv=CsvMissing())).SerializeToString())
    result = train(
        schema,
        tmp_path / "m",
        [str(records)],
        [str(tiny_model.eval_csv)],
        model=ModelOptions("dnn", hidden_units=(8,)),
        run=RunOptions(max_steps=5, exports=(), warm_start_from=str(tiny_model.model_dir)),
    )
    # Warm-started from a model trained 60 steps, 5 more steps keep its accuracy.
    assert result.metrics["accuracy"] >= tiny_model.result.metrics["accuracy"] - 0.1


def test_csv_missing_required_column_is_a_clear_error(tiny_model: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("island,species\nDream,Adelie\n")
    expected = r"bad.csv: no column 'sex', required by the schema \(no default\); missing too: 'year', "
    with pytest.raises(DataError, match=expected):
        train(tiny_model.schema, tmp_path / "m", [str(bad)], [str(bad)], run=RunOptions(max_steps=1))
    assert not (tmp_path / "m").exists()


def test_cli_train_prints_summary_and_json(tiny_model: Any, tmp_path: Path) -> None:
    args = [
        "train",
        "--schema",
        str(tiny_model.schema_path),
        "--train",
        str(tiny_model.train_csv),
        "--eval",
        str(tiny_model.eval_csv),
        "--model-dir",
        str(tmp_path / "m"),
        "--model",
        "linear",
        "--max-steps",
        "10",
        "--export",
        "final",
        "--json",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["global_step"] == 10 and len(summary["exports"]["final"]) == 1
    human = CliRunner().invoke(cli, [*args[:-1], "--max-steps", "12"])
    assert human.exit_code == 0, human.output
    assert "trained 2 steps (10 -> 12)" in human.stdout and "export      final" in human.stdout


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(
        json.dumps({"label": {"name": "y", "kind": "binary"}, "features": [{"name": "x", "dtype": "double"}]})
    )
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "--schema",
            str(tmp_path / "s.json"),
            "--train",
            "a.csv",
            "--eval",
            "b.csv",
            "--model-dir",
            str(tmp_path / "m"),
        ],
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "Error: feature 'x': dtype 'double' is not one of ['float32', 'int64', 'string']"
    ]
