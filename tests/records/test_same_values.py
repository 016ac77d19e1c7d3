"""One CSV, the same values under every command that reads records.

``tfship.records.read_records`` reads it; ``tfship export --warmup`` writes it into a real
export's warmup file; ``tfship client predict -i`` sends it to a real ``tfship serve`` (an echo
model answers with what it was sent); ``promote`` replays it as requests. The file has whole
numbers, decimals, text, an empty cell, ``NA`` in a numeric column (missing) and in a string
column (the text "NA"), a UTF-8 byte-order mark and a quoted cell holding a comma.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.inspect import read_warmup
from tfship.promote import PromoteOptions, promote
from tfship.records import read_records

pytestmark = pytest.mark.slow

HEADER = "species,island,bill_length_mm,bill_depth_mm,flipper_length_mm,body_mass_g,sex,year\n"
ROWS = [
    "Adelie,Torgersen,39.1,18.7,181,3750,male,2007\n",
    'Gentoo,"Biscoe, north",46.5,,217,NA,NA,2008\n',
    "Chinstrap,Dream,NA,17.9,192,3500,female,2009\n",
]
#: the penguins' features as an echo model's inputs.
INPUTS = {
    "island": "string",
    "bill_length_mm": "float32",
    "bill_depth_mm": "float32",
    "flipper_length_mm": "int64",
    "body_mass_g": "int64",
    "sex": "string",
    "year": "int64",
}


def _csv(path: Path, rows: list[str]) -> Path:
    path.write_bytes(b"\xef\xbb\xbf" + (HEADER + "".join(rows)).encode())
    return path


def _echo(path: Path) -> Path:
    """``echo`` answers with its inputs; ``serving_default`` with the numbers, as floats."""
    import tensorflow as tf

    specs = [tf.TensorSpec([None], getattr(tf, dtype), name=name) for name, dtype in INPUTS.items()]

    class Echo(tf.Module):
        @tf.function(input_signature=specs)
        def echo(
            self,
            island: Any,
            bill_length_mm: Any,
            bill_depth_mm: Any,
            flipper_length_mm: Any,
            body_mass_g: Any,
            sex: Any,
            year: Any,
        ) -> dict[str, Any]:
            given = [island, bill_length_mm, bill_depth_mm, flipper_length_mm, body_mass_g, sex, year]
            return {name: tf.identity(value) for name, value in zip(INPUTS, given)}

        @tf.function(input_signature=specs)
        def numbers(
            self,
            island: Any,
            bill_length_mm: Any,
            bill_depth_mm: Any,
            flipper_length_mm: Any,
            body_mass_g: Any,
            sex: Any,
            year: Any,
        ) -> dict[str, Any]:
            given = [bill_length_mm, bill_depth_mm, flipper_length_mm, body_mass_g, year]
            return {"numbers": tf.stack([tf.cast(v, tf.float32) for v in given], axis=1)}

    model = Echo()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.numbers, "echo": model.echo})
    return path


@pytest.fixture(scope="module")
def echo_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("echo") / "echo"
    _echo(base / "1")
    return base


@pytest.fixture(scope="module")
def echo_server(echo_base: Path) -> Iterator[Any]:
    from tfship.server import ModelConfig, ModelServer, ServerOptions

    server = ModelServer([ModelConfig("echo", str(echo_base))], ServerOptions(port=0, rest_port=0))
    server.start()
    try:
        server.wait_until_available("echo", 1, timeout=60)
        yield server
    finally:
        server.stop()


def _plain(value: Any) -> Any:
    """A value as the reader's Python type: text for bytes, float32 precision for floats."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (float, np.floating)):
        return float(np.float32(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def _expected(schema: Any, path: Path) -> list[dict[str, Any]]:
    """Each record's feature values from ``tfship.records``, the schema's defaults filled in."""
    return [
        {name: [_plain(v) for v in values] for name, values in schema.convert_record(record).items()}
        for record in read_records(path, schema=schema)
    ]


def _example_values(example: Any) -> dict[str, list[Any]]:
    out = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = [_plain(v) for v in getattr(feature, kind).value] if kind else []
    return out


def _warmup_values(logs: list[Any]) -> dict[str, list[dict[str, list[Any]]]]:
    """Per signature, each warmup request's feature values (from its tf.Example)."""
    import tensorflow as tf

    found: dict[str, list[dict[str, list[Any]]]] = {}
    for log in logs:
        kind = log.WhichOneof("log_type")
        request = getattr(log, kind).request
        if kind == "predict_log":
            (tensor,) = request.inputs.values()
            examples = [tf.train.Example.FromString(data) for data in tensor.string_val]
        else:
            examples = list(request.input.example_list.examples)
        found.setdefault(request.model_spec.signature_name, []).extend(_example_values(e) for e in examples)
    return found


def test_the_reader_types_each_cell_once(tmp_path: Path) -> None:
    path = _csv(tmp_path / "penguins.csv", ROWS)
    assert read_records(path) == [
        {
            "species": "Adelie",
            "island": "Torgersen",
            "bill_length_mm": 39.1,
            "bill_depth_mm": 18.7,
            "flipper_length_mm": 181,
            "body_mass_g": 3750,
            "sex": "male",
            "year": 2007,
        },
        {
            "species": "Gentoo",
            "island": "Biscoe, north",
            "bill_length_mm": 46.5,
            "flipper_length_mm": 217,
            "sex": "NA",
            "year": 2008,
        },
        {
            "species": "Chinstrap",
            "island": "Dream",
            "bill_depth_mm": 17.9,
            "flipper_length_mm": 192,
            "body_mass_g": 3500,
            "sex": "female",
            "year": 2009,
        },
    ]


@pytest.mark.estimator  # tfship export --warmup
def test_export_warmup_holds_the_values_the_reader_gives(tiny_model: Any, tmp_path: Path) -> None:
    path = _csv(tmp_path / "penguins.csv", ROWS)
    out = tmp_path / "serving"
    result = CliRunner().invoke(
        cli,
        [
            "export",
            "--model-dir",
            str(tiny_model.model_dir),
            "--out",
            str(out),
            "--warmup",
            str(path),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    (version,) = [p for p in out.iterdir() if p.name.isdigit()]
    found = _warmup_values(read_warmup(version / "assets.extra" / "tf_serving_warmup_requests"))
    expected = _expected(tiny_model.schema, path)
    assert found and all(values == expected for values in found.values()), (found, expected)
    assert expected[1]["sex"] == ["NA"] and expected[1]["island"] == ["Biscoe, north"]


def test_client_predict_sends_the_values_the_reader_gives(
    tiny_model: Any, echo_server: Any, tmp_path: Path
) -> None:
    path = _csv(tmp_path / "penguins.csv", ROWS)
    args = ["client", "predict", "-s", echo_server.address, "-m", "echo", "-k", "echo", "--json"]
    result = CliRunner().invoke(cli, [*args, "--schema", str(tiny_model.schema_path), "-i", str(path)])
    assert result.exit_code == 0, result.output
    outputs = json.loads(result.stdout)["outputs"]
    expected = _expected(tiny_model.schema, path)
    for name in INPUTS:
        assert [_plain(v) for v in outputs[name]] == [r[name][0] for r in expected], name
    # Without a schema each column takes the type the inference rule gives it (a complete file).
    complete = _csv(tmp_path / "complete.csv", [ROWS[0], ROWS[0].replace("Torgersen", '"Dream, west"')])
    result = CliRunner().invoke(cli, [*args, "-i", str(complete), "--ignore-unknown"])
    assert result.exit_code == 0, result.output
    outputs = json.loads(result.stdout)["outputs"]
    records = read_records(complete)
    assert {name: [_plain(v) for v in outputs[name]] for name in INPUTS} == {
        name: [_plain(r[name]) for r in records] for name in INPUTS
    }


def test_promote_replays_the_values_the_reader_gives(echo_base: Path, tmp_path: Path) -> None:
    path = _csv(tmp_path / "penguins.csv", ROWS)
    base = tmp_path / "base"
    shutil.copytree(echo_base, base)
    options = PromoteOptions(requests=path, latency_calls=5, max_latency_ratio=100.0, dry_run=True)
    decision = promote(echo_base / "1", base, options)
    serves = next(c for c in decision.checks if c.name == "serves")
    # three cells are missing by the one rule ("", and "NA" in a numeric column); "NA" in the
    # string column sex is the text "NA", a value
    assert serves.notes == [
        "fields the signature does not take were ignored: species",
        "3 missing value(s) took the signature's defaults",
    ], serves
    assert "answered 3/3 requests" in serves.summary, serves
