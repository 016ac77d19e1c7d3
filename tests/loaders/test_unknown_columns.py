"""Columns a signature does not take, and numbers written as text: one behaviour everywhere."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from loaders.support import EstimatorExports, make_rows, records_of
from tfship.cli import cli
from tfship.errors import ModelInputError
from tfship.loaders import load

pytestmark = pytest.mark.slow

PENGUINS = [
    {
        "island": "Dream",
        "bill_length_mm": 39.1,
        "bill_depth_mm": 18.7,
        "flipper_length_mm": 181,
        "body_mass_g": 3750,
        "sex": "male",
        "year": 2007,
    },
    {
        "island": "Biscoe",
        "bill_length_mm": 46.5,
        "bill_depth_mm": 14.8,
        "flipper_length_mm": 217,
        "body_mass_g": 5200,
        "sex": "female",
        "year": 2008,
    },
]
EXTRA = [{"species": "Adelie", "row_id": 7}, {"species": "Gentoo", "row_id": 8}]


@pytest.fixture(scope="module")
def model(tiny_model: Any) -> Any:
    with load(tiny_model.export("final"), signature="predict") as loaded:
        yield loaded


def _labelled() -> pd.DataFrame:
    return pd.DataFrame([{**p, **e} for p, e in zip(PENGUINS, EXTRA)])


def test_a_frame_with_a_label_and_an_id_is_refused_naming_them_and_the_option(model: Any) -> None:
    with pytest.raises(ModelInputError, match=r"unknown input 'row_id', 'species'.*ignore_unknown=True"):
        model.predict(_labelled())


def test_ignore_unknown_leaves_them_out_with_a_warning_naming_them(
    model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    want = model.predict(PENGUINS)["probabilities"]
    with caplog.at_level(logging.WARNING, logger="tfship.loaders"):
        got = model.predict(_labelled(), ignore_unknown=True)["probabilities"]
        batches = list(model.predict_batches(iter(_labelled().to_dict("records")), 1, ignore_unknown=True))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(np.concatenate([b["probabilities"] for b in batches]), want, rtol=1e-6)
    notes = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert notes == ["ignored 'row_id', 'species': not inputs of signature 'predict'"]  # once


def test_a_number_written_as_text_is_read_as_every_file_reader_reads_it(
    model: Any, tmp_path: Path, tiny_model: Any
) -> None:
    as_text = [
        {**p, "body_mass_g": str(p["body_mass_g"]), "bill_depth_mm": str(p["bill_depth_mm"])}
        for p in PENGUINS
    ]
    want = model.predict(PENGUINS)["probabilities"]
    np.testing.assert_allclose(model.predict(as_text)["probabilities"], want, rtol=1e-6)
    np.testing.assert_allclose(model.predict(pd.DataFrame(as_text))["probabilities"], want, rtol=1e-6)
    columns = {name: [r[name] for r in as_text] for name in as_text[0]}  # a list per column
    np.testing.assert_allclose(model.predict(columns)["probabilities"], want, rtol=1e-6)
    source, out = tmp_path / "text.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in as_text))
    result = CliRunner().invoke(
        cli,
        [
            "predict",
            str(tiny_model.export("final")),
            str(source),
            "-o",
            str(out),
            "-s",
            "predict",
            "--outputs",
            "probabilities",
        ],
    )
    assert result.exit_code == 0, result.output
    written = [json.loads(line)["probabilities"] for line in out.read_text().splitlines()]
    np.testing.assert_allclose(written, want, rtol=1e-6)
    with pytest.raises(ModelInputError, match=r"input 'year': record 1: expected int64, found '2008.5'"):
        model.predict([PENGUINS[0], {**PENGUINS[1], "year": "2008.5"}])


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_predict_names_the_columns_it_ignores_and_refuses_them_when_asked(
    tiny_model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, suffix: str
) -> None:
    source = tmp_path / f"in.{suffix}"
    frame = _labelled()
    if suffix == "csv":
        frame.to_csv(source, index=False)
    else:
        source.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    export = str(tiny_model.export("final"))
    with caplog.at_level(logging.WARNING, logger="tfship.loaders"):
        ok = CliRunner().invoke(
            cli, ["predict", export, str(source), "-o", str(tmp_path / "a.csv"), "--keep-columns", "row_id"]
        )
    assert ok.exit_code == 0, ok.output
    notes = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert notes == [f"ignored column(s) 'species' of {source}: not inputs of signature 'serving_default'"]
    out = tmp_path / "b.csv"
    refused = CliRunner().invoke(cli, ["predict", export, str(source), "-o", str(out), "--no-ignore-unknown"])
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"Error: {source}: column(s) 'row_id', 'species' not inputs of")
    assert not out.exists()


def test_a_raw_signature_reads_numbers_written_as_text_too(estimator_exports: EstimatorExports) -> None:
    records = records_of(make_rows(3, seed=61))
    with load(estimator_exports.raw) as raw:
        want = raw.predict(records)["probabilities"]
        as_text = [{**r, "x": str(r["x"]), "v2": [str(v) for v in r["v2"]]} for r in records]
        np.testing.assert_allclose(raw.predict(as_text)["probabilities"], want, rtol=1e-6)


def test_a_sparse_input_takes_values_by_the_same_rule(estimator_exports: EstimatorExports) -> None:
    records = records_of(make_rows(2, seed=62))
    with load(estimator_exports.parsing, signature="predict") as parsing:
        want = parsing.predict(records)["probabilities"]  # color and tags are variable-length here
        as_bytes = [{**r, "tags": [t.encode() for t in r["tags"]]} for r in records]
        np.testing.assert_allclose(parsing.predict(as_bytes)["probabilities"], want, rtol=1e-6)
        with pytest.raises(ModelInputError, match=r"input 'color': record 1: expected string, found 2\.5"):
            parsing.predict([records[0], {**records[1], "color": 2.5}])
