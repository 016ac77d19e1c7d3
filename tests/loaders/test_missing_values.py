"""An explicit string is a value: only a null (or, in CSV, an empty cell or an NA token in a
numeric column) is missing, in every format that ``predict`` and ``LocalModel`` read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.loaders import load

pytestmark = pytest.mark.slow

#: Strings a text model sees all the time; each is a value, never "missing".
TEXTS = ["", "  ", "None", "NA", "null", "plain"]
TEXT_DEFAULT = "<default>"
X_DEFAULT = -1.0


@pytest.fixture(scope="module")
def echo_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TF1 graph export echoing ``text`` and ``x``: a parsing ``serving_default`` (with
    defaults for both features) and a ``raw`` signature (placeholders, no defaults)."""
    import tensorflow as tf

    g1 = tf.compat.v1
    path = tmp_path_factory.mktemp("echo") / "1"
    graph = tf.Graph()
    with graph.as_default(), g1.Session(graph=graph) as session:
        examples = g1.placeholder(tf.string, [None], name="input_example_tensor")
        spec = {
            "text": tf.io.FixedLenFeature([], tf.string, default_value=TEXT_DEFAULT),
            "x": tf.io.FixedLenFeature([], tf.float32, default_value=X_DEFAULT),
        }
        parsed = tf.io.parse_example(examples, spec)
        text = g1.placeholder(tf.string, [None], name="text")
        x = g1.placeholder(tf.float32, [None], name="x")
        build = g1.saved_model.signature_def_utils.predict_signature_def
        signatures = {
            "serving_default": build(
                {"examples": examples},
                {"text": tf.identity(parsed["text"]), "x": tf.identity(parsed["x"])},
            ),
            "raw": build({"text": text, "x": x}, {"text": tf.identity(text), "x": tf.identity(x)}),
        }
        builder = g1.saved_model.Builder(str(path))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
        builder.save()
    return path


def _write(kind: str, directory: Path, texts: list[Any], xs: list[Any]) -> Path:
    records = [{"id": i, "text": s, "x": x} for i, (s, x) in enumerate(zip(texts, xs))]
    if kind == "jsonl":
        path = directory / "in.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    elif kind == "parquet":
        path = directory / "in.parquet"
        pd.DataFrame(records).to_parquet(path)
    elif kind == "tfrecord":
        import tensorflow as tf

        train = tf.train
        path = directory / "in.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for r in records:
                feats = {
                    "id": train.Feature(int64_list=train.Int64List(value=[r["id"]])),
                    "text": train.Feature(bytes_list=train.BytesList(value=[r["text"].encode()])),
                    "x": train.Feature(float_list=train.FloatList(value=[r["x"]])),
                }
                example = train.Example(features=train.Features(feature=feats))
                writer.write(example.SerializeToString())
    else:
        raise AssertionError(kind)
    return path


def _predict(model: Path, source: Path, out: Path, *extra: str) -> Any:
    args = ["predict", str(model), str(source), "-o", str(out), "--keep-columns", "id", *extra]
    return CliRunner().invoke(cli, args)


def _texts(out: Path) -> list[str]:
    return [json.loads(line)["text"] for line in out.read_text().splitlines()]


@pytest.mark.parametrize("signature", ["serving_default", "raw"])
@pytest.mark.parametrize("kind", ["jsonl", "parquet", "tfrecord"])
def test_typed_formats_keep_every_string_as_it_is(
    echo_model: Path, tmp_path: Path, kind: str, signature: str
) -> None:
    source = _write(kind, tmp_path, TEXTS, [float(i) for i in range(len(TEXTS))])
    out = tmp_path / "out.jsonl"
    result = _predict(echo_model, source, out, "-s", signature)
    assert result.exit_code == 0, result.output
    assert f"rows in: {len(TEXTS)}, predicted: {len(TEXTS)}, rejected: 0" in result.stdout
    assert _texts(out) == TEXTS


def test_typed_formats_treat_only_null_as_missing(echo_model: Path, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    rows = [{"text": None, "x": None}, {"x": 1.0}, {"text": "NA", "x": 2.0}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    result = _predict(echo_model, source, out, "--keep-columns", "text")
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in out.read_text().splitlines()]
    assert [a["text"] for a in answers] == [TEXT_DEFAULT, TEXT_DEFAULT, "NA"]
    assert [a["x"] for a in answers] == [X_DEFAULT, 1.0, 2.0]
    frame = pd.DataFrame({"text": ["a", None, "null"], "x": [1.0, 2.0, np.nan]})
    pq = tmp_path / "nulls.parquet"
    frame.to_parquet(pq)
    result = _predict(echo_model, pq, out, "--keep-columns", "x")
    assert result.exit_code == 0, result.output
    assert _texts(out) == ["a", TEXT_DEFAULT, "null"]


def _csv(path: Path, texts: list[str], xs: list[str]) -> Path:
    def cell(v: str) -> str:
        return '"' + v.replace('"', '""') + '"' if v.strip() != v or "," in v else v

    lines = [f"{i},{cell(s)},{cell(x)}" for i, (s, x) in enumerate(zip(texts, xs))]
    path.write_text("id,text,x\n" + "\n".join(lines) + "\n")
    return path


def test_csv_empty_cell_is_missing_and_other_strings_are_text(echo_model: Path, tmp_path: Path) -> None:
    source = _csv(tmp_path / "in.csv", TEXTS, ["1"] * len(TEXTS))
    out = tmp_path / "out.jsonl"
    result = _predict(echo_model, source, out)
    assert result.exit_code == 0, result.output
    assert _texts(out) == [TEXT_DEFAULT, *TEXTS[1:]]  # spaces kept, tokens kept
    # Without a default (the raw signature) the empty cell is a reject, and only it.
    rejects = tmp_path / "rejects.jsonl"
    result = _predict(echo_model, source, out, "-s", "raw", "--rejects", str(rejects))
    assert result.exit_code == 0, result.output
    assert "predicted: 5, rejected: 1" in result.stdout
    (reject,) = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert reject["line"] == 2 and reject["reason"] == "field 'text': missing, and the feature has no default"
    assert _texts(out) == TEXTS[1:]


def test_csv_na_tokens_are_missing_only_in_numeric_columns(echo_model: Path, tmp_path: Path) -> None:
    xs = ["", "  ", "None", "NA", "null", "2.5"]
    source = _csv(tmp_path / "in.csv", TEXTS, xs)
    out = tmp_path / "out.jsonl"
    result = _predict(echo_model, source, out)
    assert result.exit_code == 0, result.output
    got = [json.loads(line)["x"] for line in out.read_text().splitlines()]
    assert got == [X_DEFAULT] * 5 + [2.5]
    # --na-values sets the list: "NA" and "None" are then not numbers, and are rejected.
    result = _predict(echo_model, source, out, "--na-values", "null")
    assert result.exit_code == 0, result.output
    assert "predicted: 4, rejected: 2" in result.stdout
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["0", "1", "4", "5"]
    # Asked for, the tokens mean missing in string columns too.
    result = _predict(echo_model, source, out, "--na-strings")
    assert result.exit_code == 0, result.output
    assert _texts(out) == [TEXT_DEFAULT, "  ", TEXT_DEFAULT, TEXT_DEFAULT, TEXT_DEFAULT, "plain"]


def test_csv_rule_holds_on_the_slow_path(echo_model: Path, tmp_path: Path) -> None:
    # A blank line sends the block through the line-by-line CSV reader.
    source = _csv(tmp_path / "in.csv", TEXTS, ["NA", "1", "1", "1", "1", "1"])
    source.write_text(source.read_text().replace("\n1,", "\n\n1,", 1))
    out = tmp_path / "out.jsonl"
    result = _predict(echo_model, source, out)
    assert result.exit_code == 0, result.output
    assert _texts(out) == [TEXT_DEFAULT, *TEXTS[1:]]
    assert json.loads(out.read_text().splitlines()[0])["x"] == X_DEFAULT


@pytest.mark.parametrize("signature", ["serving_default", "raw"])
def test_local_model_records_and_dataframes_keep_strings(echo_model: Path, signature: str) -> None:
    with load(echo_model, signature=signature) as model:
        records = [{"text": s, "x": 1.0} for s in TEXTS]
        got = model.predict(records)["text"].tolist()
        assert [v.decode() for v in got] == TEXTS
        frame = pd.DataFrame({"text": TEXTS, "x": [1.0] * len(TEXTS)})
        assert [v.decode() for v in model.predict(frame)["text"].tolist()] == TEXTS
    with load(echo_model) as model:  # defaults fill nulls, and only nulls
        frame = pd.DataFrame({"text": ["NA", None], "x": [np.nan, 3.0]})
        out = model.predict(frame)
        assert [v.decode() for v in out["text"].tolist()] == ["NA", TEXT_DEFAULT]
        assert out["x"].tolist() == [X_DEFAULT, 3.0]
