"""One missing-value rule (``tfship.schema.CsvMissing``) for every reader of CSV and records:
the trainer's input_fn, schema records, and the client's record files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfship.errors import DataError
from tfship.records import BySchema, to_example
from tfship.schema import CsvMissing, Schema, csv_column_dtype, is_missing

TEXTS = ["", "  ", "None", "NA", "null"]
SCHEMA = Schema.from_dict(
    {
        "label": {"name": "y", "kind": "regression"},
        "features": [
            {"name": "text", "dtype": "string", "default": "<d>", "use": {"kind": "hash", "buckets": 4}},
            {"name": "x", "dtype": "float32", "default": -1.0},
        ],
    }
)


@pytest.mark.parametrize("text", TEXTS)
def test_a_string_record_value_is_a_value(text: str) -> None:
    assert not is_missing(text)
    assert SCHEMA.convert_record({"text": text, "x": 1.0}) == {"text": [text], "x": [1.0]}
    feature = to_example({"text": text, "x": 1}, BySchema(SCHEMA)).features.feature["text"]
    assert feature.bytes_list.value == [text.encode()]


def test_only_null_is_missing_in_records_and_a_token_is_not_a_number() -> None:
    assert SCHEMA.convert_record({"text": None}) == {"text": ["<d>"], "x": [-1.0]}
    with pytest.raises(DataError, match=r"r:1: field 'x': expected float32, found 'NA'"):
        SCHEMA.convert_record({"x": "NA"}, where="r:1")


def test_csv_cells_by_column_type() -> None:
    rule = CsvMissing()
    assert [rule.cell(t, "string") for t in TEXTS] == [True, False, False, False, False]
    assert [rule.cell(t, "float32") for t in TEXTS] == [True] * 5
    row = SCHEMA.convert_record({"text": "NA", "x": " NA "}, csv=rule)
    assert row == {"text": ["NA"], "x": [-1.0]}
    assert SCHEMA.convert_record({"text": ""}, csv=rule) == {"text": ["<d>"], "x": [-1.0]}
    assert CsvMissing(strings=True).cell("NA", "string")
    assert not CsvMissing(na_values=()).cell("NA", "int64")
    assert csv_column_dtype(["1", "NA", ""]) == "int64"
    assert csv_column_dtype(["1", "NA"], CsvMissing(na_values=())) == "string"


@pytest.mark.slow
@pytest.mark.estimator  # training's input function
def test_trainer_csv_input_follows_the_rule(tmp_path: Path) -> None:
    from tfship.trainer import InputOptions, build_input_fn

    path = tmp_path / "train.csv"
    cells = [('""', "1.5"), ('"  "', "NA"), ("None", "None"), ("NA", ""), ("null", "null")]
    path.write_text("text,x,y\n" + "".join(f"{t},{x},0.5\n" for t, x in cells))
    input_fn = build_input_fn(SCHEMA, [str(path)], InputOptions(batch_size=8, epochs=1), training=False)
    features, _ = next(iter(input_fn()))
    assert [v.decode() for v in features["text"].numpy()] == ["<d>", "  ", "None", "NA", "null"]
    assert features["x"].numpy().tolist() == [1.5, -1.0, -1.0, -1.0, -1.0]


def _echo_classifier(path: Path) -> Path:
    """A TF1 export whose classify signature answers with the features it parsed: ``text``
    as the first class, ``x`` and ``n`` as the scores of the second and third."""
    import tensorflow as tf

    v1 = tf.compat.v1
    spec = {
        "text": tf.io.FixedLenFeature([], tf.string, default_value="<d>"),
        "x": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0),
        "n": tf.io.FixedLenFeature([], tf.int64, default_value=-7),
    }
    with tf.Graph().as_default(), v1.Session() as session:
        examples = v1.placeholder(tf.string, [None], name="input_example_tensor")
        parsed = tf.io.parse_example(examples, spec)
        x, n = parsed["x"], tf.cast(parsed["n"], tf.float32)
        classes = tf.stack([parsed["text"], tf.strings.as_string(x), tf.strings.as_string(n)], axis=1)
        scores = tf.stack([tf.zeros_like(x), x, n], axis=1)
        build = v1.saved_model.signature_def_utils.classification_signature_def
        builder = v1.saved_model.Builder(str(path / "1"))
        signatures = {"serving_default": build(examples, classes, scores)}
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
        builder.save()
    return path


@pytest.mark.slow
def test_client_csv_records_follow_the_rule(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tfship.cli import cli
    from tfship.server import ModelServer, ServerOptions

    # Without --schema the client builds each tf.Example from the record's own values: a
    # missing cell is left out (the model's default answers), a number must be a number.
    base = _echo_classifier(tmp_path / "echo")
    csv_file = tmp_path / "r.csv"
    csv_file.write_text('text,x,n\n"  ",NA,1\nNone,2.5,\nNA,,3\n,null,4\n')
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    with ModelServer.from_base_path(base, "echo", options=ServerOptions(port=0)) as server:
        server.wait_until_available("echo", timeout=60)
        answers = {}
        for path in (csv_file, jsonl):
            args = ["client", "classify", "-s", server.address, "-m", "echo", "-i", str(path), "--json"]
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 0, result.output
            answers[path.suffix] = json.loads(result.output)["results"]
    parsed = [(text, x, n) for (text, _), (_, x), (_, n) in answers[".csv"]]
    assert parsed == [("  ", -1.0, 1.0), ("None", 2.5, -7.0), ("NA", -1.0, 3.0), ("<d>", -1.0, 4.0)]
    assert [row[0][0] for row in answers[".jsonl"]] == TEXTS
