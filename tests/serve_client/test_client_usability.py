"""The first mistakes a user makes with the client get one line that says what would work."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.serve_client import AsyncServingClient, ServingClient


def test_a_wrong_keyword_names_the_right_one() -> None:
    client = ServingClient("127.0.0.1:1")  # never called: the keywords are checked first
    with pytest.raises(
        TypeError,
        match=r"'signature_name' \(did you mean 'signature'\?\); it takes: "
        r"model, inputs, signature, version",
    ):
        client.predict("m", {"x": [[1.0, 2.0]]}, signature_name="serving_default")  # type: ignore[call-arg]  # the wrong keyword is the point
    client.close()

    async def call() -> None:
        async with AsyncServingClient("127.0.0.1:1") as aclient:
            await aclient.classify("m", [{}], sig="classify")  # type: ignore[call-arg]  # the wrong keyword is the point

    with pytest.raises(TypeError, match=r"'sig' \(did you mean 'signature'\?\)"):
        asyncio.run(call())


@pytest.mark.slow
def test_predict_names_extra_columns_and_can_leave_them_out(server: Any) -> None:
    data = json.dumps({"x": [[1.0, 2.0]], "label": [1]})
    args = ["client", "predict", "-s", server.address, "-m", "m", "-d", data]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2
    assert refused.stderr == (
        "Error: 'label' is not an input of signature 'serving_default' (it takes x); "
        "--ignore-unknown leaves such columns out (--schema FILE leaves out its label)\n"
    )
    kept = CliRunner().invoke(cli, [*args, "--ignore-unknown", "--json"])
    assert kept.exit_code == 0, kept.output
    assert "left out 'label'" in kept.stderr
    assert json.loads(kept.stdout)["outputs"]["y"] == [[5.0 + 2.0]]  # x @ [1, 2] + version 2


@pytest.mark.slow
def test_regress_on_a_classifier_is_one_line_naming_what_would_work(classifier_server: Any) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "client",
            "regress",
            "-s",
            classifier_server.address,
            "-m",
            "penguins",
            "-d",
            json.dumps({"bill": 40.0, "island": "Dream"}),
        ],
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "Error: Regress model 'penguins': signature 'serving_default' is a "
        "tensorflow/serving/classify signature that cannot regress; no signature here can regress "
        "(the server said: "
    )


@pytest.mark.slow
def test_predict_with_the_schema_leaves_the_label_out_of_a_raw_signature(
    tiny_model: Any, tmp_path: Path
) -> None:
    # A table straight from training (label column, a gap) sent to a raw signature: the schema
    # names the label, which is left out, and the gap takes the schema's default, as
    # `tfship predict` does with the export's own copy of the schema.
    from tfship.server import ModelServer, ServerOptions

    lines = tiny_model.eval_csv.read_text().splitlines()[:4]
    header = lines[0].split(",")
    gap = lines[2].split(",")
    gap[header.index("bill_length_mm")] = ""
    rows = tmp_path / "rows.csv"
    rows.write_text("\n".join([lines[0], lines[1], ",".join(gap), lines[3]]) + "\n")
    export = tiny_model.export("best")
    args = [
        "client",
        "predict",
        "-m",
        "penguins",
        "-k",
        "raw:predict",
        "-i",
        str(rows),
        "-o",
        "probabilities",
        "--json",
    ]
    with ModelServer.from_base_path(export.parent, "penguins", options=ServerOptions(port=0)) as server:
        args[2:2] = ["-s", server.address]
        refused = CliRunner().invoke(cli, args)
        sent = CliRunner().invoke(cli, [*args, "--schema", str(tiny_model.schema_path)])
    assert refused.exit_code == 2 and "'species'" in refused.stderr
    assert sent.exit_code == 0, sent.output
    assert sent.stderr == "left out 'species': the schema's label\n"
    remote = np.array(json.loads(sent.stdout)["outputs"]["probabilities"])
    local = tmp_path / "local.jsonl"
    ran = CliRunner().invoke(
        cli,
        [
            "predict",
            str(export),
            "-i",
            str(rows),
            "-o",
            str(local),
            "-s",
            "raw:predict",
            "--outputs",
            "probabilities",
        ],
    )
    assert ran.exit_code == 0, ran.output
    here = [json.loads(line)["probabilities"] for line in local.read_text().splitlines()]
    assert remote.shape == (3, 3)
    np.testing.assert_allclose(remote, np.array(here), rtol=1e-5)


def test_the_library_says_in_one_line_which_signatures_can_classify(client: Any, server: Any) -> None:
    from tfship.serve_client import InvalidInputError, RestServingClient

    with RestServingClient(server.rest_url) as rest:
        for each in (client, rest):
            with pytest.raises(InvalidInputError) as caught:
                each.classify("m", [{"x": [1.0, 2.0]}], signature="regress")
            text = str(caught.value)
            assert "\n" not in text
            assert text.startswith(
                "Classify model 'm': signature 'regress' is a tensorflow/serving/predict signature "
                "that cannot classify; signatures that can: classify (the server said: "
            )


def test_a_whole_number_for_a_float_feature_is_named_with_the_fix(tiny_model: Any) -> None:
    # A JSON 40 for a float feature of a parsing signature: TF Serving refuses the Example;
    # the error says which feature, what was sent, and what to write instead.
    from tfship.serve_client import InvalidInputError, ServingClient
    from tfship.server import ModelServer, ServerOptions

    record = {
        "island": "Biscoe",
        "bill_length_mm": 40,
        "bill_depth_mm": 18.0,
        "flipper_length_mm": 190,
        "body_mass_g": 3800,
        "sex": "male",
        "year": 2008,
    }
    export = tiny_model.export("best")
    with (
        ModelServer.from_base_path(export.parent, "penguins", options=ServerOptions(port=0)) as server,
        ServingClient(server.address) as client,
    ):
        with pytest.raises(InvalidInputError) as caught:
            client.classify("penguins", [record])
        fixed = client.classify("penguins", [{**record, "bill_length_mm": 40.0}])
    said = str(caught.value)
    assert (
        "example 0: feature 'bill_length_mm' was sent as int64 but the model reads it as float: "
        "a whole number in JSON is an int64 list; write it with a decimal point (1.0)"
    ) in said
    assert len(fixed.classes) == 1
