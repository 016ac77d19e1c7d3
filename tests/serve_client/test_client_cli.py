"""`tfship client ...` through click's CliRunner, against the real local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["client", *args], catch_exceptions=False)


def test_status(server: Any) -> None:
    result = run("status", "-s", server.address, "-m", "m")
    assert result.exit_code == 0, result.output
    assert "version 2" in result.output and "AVAILABLE" in result.output
    data = json.loads(run("status", "-s", server.address, "-m", "m", "--json").output)
    assert [v["version"] for v in data["versions"]] == [2, 1]


def test_metadata(server: Any) -> None:
    result = run("metadata", "-s", server.address, "-m", "m", "-k", "serving_default")
    assert result.exit_code == 0, result.output
    assert "input  x: float32 [-1, 2]" in result.output
    data = json.loads(run("metadata", "-s", server.address, "-m", "m", "--json").output)
    assert data["signatures"]["serving_default"]["inputs"]["x"] == {"dtype": "float32", "shape": [None, 2]}
    assert "__saved_model_init_op" not in data["signatures"]


def test_predict_inline_and_json(server: Any) -> None:
    result = run(
        "predict", "-s", server.address, "-m", "m", "-d", '{"x": [[1.0, 2.0]]}', "--json", "--label", "stable"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["outputs"]["y"] == [[6.0]]
    assert data["model_spec"]["version"] == 1
    human = run("predict", "-s", server.address, "-m", "m", "-d", '{"x": [[1.0, 2.0]]}', "-o", "y")
    assert "model m version 2 signature serving_default" in human.output
    assert "y: float32 [1, 1]" in human.output and "doubled" not in human.output


@pytest.mark.parametrize("kind", ["jsonl", "csv", "npy", "named-npy", "json"])
def test_predict_from_files(server: Any, tmp_path: Path, kind: str) -> None:
    rows = [[1.0, 2.0], [3.0, 4.0]]
    if kind == "jsonl":
        path = tmp_path / "in.jsonl"
        path.write_text("\n".join(json.dumps({"x": r}) for r in rows) + "\n")
        spec = str(path)
    elif kind == "json":
        path = tmp_path / "in.json"
        path.write_text(json.dumps([{"x": r} for r in rows]))
        spec = str(path)
    elif kind == "csv":
        path = tmp_path / "in.csv"
        path.write_text("text\nab\ncd\n")
        result = run("predict", "-s", server.address, "-m", "m", "-k", "strings", "-i", str(path), "--json")
        assert json.loads(result.output)["outputs"]["upper"] == ["AB", "CD"]
        return
    else:
        path = tmp_path / "in.npy"
        np.save(path, np.array(rows, np.float32))
        spec = str(path) if kind == "npy" else f"x={path}"
    result = run("predict", "-s", server.address, "-m", "m", "-i", spec, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["outputs"]["y"] == [[7.0], [13.0]]


def test_classify_and_regress(server: Any, tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"x": [0.0, 0.0]}\n{"x": [5.0, 0.0]}\n')
    result = run("classify", "-s", server.address, "-m", "m", "-k", "classify", "-i", str(path))
    assert result.exit_code == 0, result.output
    assert "example 0: pos" in result.output and "example 1: neg" in result.output
    data = json.loads(
        run(
            "regress",
            "-s",
            server.address,
            "-m",
            "m",
            "-k",
            "regress",
            "-d",
            '[{"x": [1.0, 2.0]}]',
            "-V",
            "1",
            "--json",
        ).output
    )
    assert data["results"] == [4.0]


def test_classify_over_rest(server: Any) -> None:
    result = run(
        "classify",
        "--rest",
        "-s",
        server.rest_url,
        "-m",
        "m",
        "-k",
        "classify",
        "-d",
        '{"x": [0.0, 0.0]}',
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert [c[0] for c in json.loads(result.output)["results"][0]] == ["neg", "pos"]


def test_wait(server: Any) -> None:
    result = run("wait", "-s", server.address, "-m", "m", "--timeout", "5")
    assert result.output.strip() == "model m version 2 is AVAILABLE"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["predict", "-m", "ghost", "-d", '{"x": [[1.0, 2.0]]}'], 2, "Latest(ghost)"),
        (["predict", "-m", "m", "-d", '{"x": [1.0]}'], 2, "shape [1] does not fit"),
        (["predict", "-m", "m", "-d", "{oops"], 2, "--data: invalid JSON"),
        (["predict", "-m", "m"], 2, "give inputs with --input FILE or --data JSON"),
        (["status", "-m", "m", "-V", "9"], 2, "Could not find version 9"),
        (["wait", "-m", "m", "-V", "9", "--timeout", "0.3"], 1, "not available after"),
    ],
)
def test_errors_are_one_line(server: Any, args: list[str], code: int, message: str) -> None:
    result = CliRunner().invoke(cli, ["client", args[0], "-s", server.address, *args[1:]])
    assert result.exit_code == code, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]


@pytest.mark.parametrize(
    ("name", "text", "place", "first"),
    [
        # a blank line between rows: the third record is on line 6, not on the 4th line a
        # count of records gives
        ("rows.csv", "text,other\nab,1\n\ncd,2\n\nef,\n", "rows.csv:6", "rows.csv:2"),
        ("rows.jsonl", '{"text": "ab"}\n\n{"other": 2}\n', "rows.jsonl:3", "rows.jsonl:1"),
        ("rows.json", '[\n  {"text": "ab"},\n\n  {"other": 2}\n]\n', "rows.json:4", "rows.json:2"),
    ],
)
def test_a_record_without_a_field_is_named_by_file_and_line(
    server: Any, tmp_path: Path, name: str, text: str, place: str, first: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(
        cli, ["client", "predict", "-s", server.address, "-m", "m", "-k", "strings", "-i", str(path)]
    )
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: {tmp_path / place}: the record has fields "), line
    assert f"same fields as the first record ({tmp_path / first})" in line


def test_an_inline_record_without_a_field_is_named_by_number(server: Any) -> None:
    data = '[{"text": "ab"}, {"other": 1}]'
    result = CliRunner().invoke(cli, ["client", "predict", "-s", server.address, "-m", "m", "-d", data])
    assert result.exit_code == 2, result.output
    assert "Error: --data: record 2: the record has fields ['other']" in result.output


def test_version_and_label_together_is_a_usage_error(server: Any) -> None:
    result = CliRunner().invoke(
        cli, ["client", "predict", "-s", server.address, "-m", "m", "-V", "1", "-l", "stable", "-d", "{}"]
    )
    assert result.exit_code == 2
    assert "--version or --label, not both" in result.output


@pytest.mark.slow
def test_parsing_signatures_with_a_schema(classifier_server: Any, tmp_path: Path) -> None:
    from .conftest import CLASSIFIER_SCHEMA

    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(CLASSIFIER_SCHEMA))
    records = tmp_path / "records.csv"
    records.write_text("species,bill,island\nA,36,Dream\nC,51.5,Biscoe\n")
    common = [
        "-s",
        classifier_server.address,
        "-m",
        "penguins",
        "-i",
        str(records),
        "--schema",
        str(schema),
        "--json",
    ]
    predicted = json.loads(run("predict", *common, "-k", "predict", "-o", "probabilities").output)
    probabilities = np.array(predicted["outputs"]["probabilities"])
    assert probabilities.shape == (2, 3) and np.allclose(probabilities.sum(axis=1), 1.0)
    classified = json.loads(run("classify", *common).output)
    scores = np.array([[score for _, score in row] for row in classified["results"]])
    assert np.allclose(scores, probabilities, atol=1e-6)  # same model, two signatures


def test_schema_needs_a_signature_built_from_it(server: Any, tmp_path: Path) -> None:
    from .conftest import CLASSIFIER_SCHEMA

    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(CLASSIFIER_SCHEMA))
    args = ["-s", server.address, "-m", "m", "-d", '{"bill": 1}', "--schema", str(schema)]
    result = CliRunner().invoke(cli, ["client", "predict", *args])
    assert result.exit_code == 2
    assert "signature 'serving_default' takes 'x', which the schema does not declare" in result.output
    assert "--schema needs a parsing signature or a raw one built from the schema" in result.output


def test_rest_commands_print_no_request_logs(server: Any) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    args = [sys.executable, "-m", "tfship", "client", "status", "--rest", "-s", server.rest_url, "-m", "m"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and "AVAILABLE" in done.stdout
    assert done.stderr == ""
    loud = [*args[:3], "-v", *args[3:]]
    verbose = subprocess.run(loud, capture_output=True, text=True, env=env, timeout=60)
    assert "HTTP Request: GET" in verbose.stderr  # the check can fail: -v shows them


def test_records_of_scalars_fill_inputs_of_one_value_per_row(tf: Any, tmp_path: Path) -> None:
    # A feature column's numeric input is [?, 1] (a raw_receiver from feature columns): a
    # record file holds one number per field, as a CSV column does, and each becomes its row.
    from tfship.server import ModelServer, ServerOptions

    class Columns(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None, 1], tf.float32, name="speed"),
                tf.TensorSpec([None], tf.string, name="kind"),
            ]
        )
        def serve(self, speed: Any, kind: Any) -> dict[str, Any]:
            return {"twice": 2.0 * speed, "kind": kind}

    module = Columns()
    tf.saved_model.save(module, str(tmp_path / "cols" / "1"), signatures={"serving_default": module.serve})
    records = tmp_path / "cars.jsonl"
    records.write_text('{"speed": 1.5, "kind": "a"}\n{"speed": 4, "kind": "b"}\n')
    srv = ModelServer.from_base_path(tmp_path / "cols", "cols", options=ServerOptions(port=0, rest_port=0))
    srv.start()
    try:
        srv.wait_until_available("cols", 1, timeout=60)
        for target in ([srv.address], ["--rest", "-s", f"http://127.0.0.1:{srv.rest_port}"]):
            args = ["-s", *target] if len(target) == 1 else target
            result = run("predict", *args, "-m", "cols", "-i", str(records), "--json")
            assert result.exit_code == 0, result.output
            assert json.loads(result.output)["outputs"]["twice"] == [[3.0], [8.0]]
        # a list where one value is expected is still refused, naming the input
        records.write_text('{"speed": [1.5, 2.0], "kind": "a"}\n')
        result = run("predict", "-s", srv.address, "-m", "cols", "-i", str(records))
        assert result.exit_code == 2 and "input 'speed'" in result.output
    finally:
        srv.stop()
