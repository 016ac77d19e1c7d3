"""Predict with records against a signature that parses serialized ``tf.train.Example`` s (a
custom ``model_fn`` exported with a parsing receiver): the client builds the Examples, over
gRPC, REST and from the command line, or says in one line how to send them."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.schema import Schema
from tfship.serve_client import (
    AsyncServingClient,
    DeadlineExceededError,
    InvalidInputError,
    RestServingClient,
    ServingClient,
)

ROWS = [{"bill": 41.5, "n": 3, "island": "Dream"}, {"bill": 50.0, "island": "Biscoe"}, {"n": 7}]
SCHEMA = Schema.from_dict(
    {
        "label": {"name": "species", "kind": "multiclass", "vocabulary": ["A", "B"]},
        "features": [
            {"name": "bill", "dtype": "float32", "default": 40.0},
            {"name": "n", "dtype": "int64", "default": 0},
            {"name": "island", "dtype": "string", "default": ""},
        ],
    }
)


def _check_outputs(outputs: dict[str, Any]) -> None:
    """What the model computes from ROWS: the features the server parsed, defaults filled."""
    np.testing.assert_array_equal(outputs["doubled"], [[83.0], [100.0], [80.0]])
    np.testing.assert_array_equal(outputs["next"], [[4], [1], [8]])
    assert outputs["island"].ravel().tolist() == [b"Dream", b"Biscoe", b""]


@pytest.mark.parametrize("rest", [False, True], ids=["grpc", "rest"])
def test_records_are_sent_as_examples(custom_server: Any, rest: bool) -> None:
    kind = RestServingClient if rest else ServingClient
    with kind(custom_server.rest_url if rest else custom_server.address, timeout=20) as client:
        assert list(client.metadata("custom").signatures["serving_default"].inputs) == ["examples"]
        _check_outputs(client.predict("custom", ROWS).outputs)
        _check_outputs(client.predict("custom", tuple(ROWS), schema=SCHEMA).outputs)


def test_records_are_sent_without_validation_and_by_the_async_client(custom_server: Any) -> None:
    with ServingClient(custom_server.address, timeout=20, validate=False) as client:
        _check_outputs(client.predict("custom", ROWS).outputs)

    async def call() -> Any:
        async with AsyncServingClient(custom_server.address, timeout=20) as client:
            return await client.predict("custom", ROWS)

    _check_outputs(asyncio.run(call()).outputs)


def test_a_schema_types_whole_numbers_as_the_model_reads_them(custom_server: Any) -> None:
    rows = [{"bill": 41, "n": 3}]  # a whole number is an int64 by its Python type
    with ServingClient(custom_server.address, timeout=20) as client:
        with pytest.raises(InvalidInputError, match="typed by their Python values.*give schema=") as info:
            client.predict("custom", rows)
        assert "\n" not in str(info.value)
        answer = client.predict("custom", rows, schema=SCHEMA)
    np.testing.assert_array_equal(answer.outputs["doubled"], [[82.0]])


def test_records_for_a_signature_that_takes_columns_are_refused_in_one_line(client: ServingClient) -> None:
    with pytest.raises(InvalidInputError, match=r"takes x: float32 \[\?, 2\], not records.*give a dict"):
        client.predict("m", [{"x": [1.0, 2.0]}])
    # one string input that the records name is a column, not serialized Examples
    with pytest.raises(InvalidInputError, match="signature 'strings' takes text: string"):
        client.predict("m", [{"text": "ab"}], signature="strings")


def test_records_for_a_string_input_not_known_as_examples_are_refused(client: ServingClient) -> None:
    """One string input that nothing marks as serialized Examples may take text: no guessing."""
    for signature, key in (("strings", "text"), ("classify", "inputs")):
        with pytest.raises(
            InvalidInputError,
            match=(
                f"takes one string input, '{key}', which nothing says parses tf.train.Example s.*"
                rf"give \{{'{key}': \[tfship.records.to_example"
            ),
        ) as info:
            client.predict("m", [{"word": "ab"}], signature=signature)
        assert "\n" not in str(info.value)


@pytest.mark.timing
def test_building_many_records_stops_at_the_deadline(custom_server: Any) -> None:
    with ServingClient(custom_server.address, timeout=30) as client:
        client.metadata("custom")
        start = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="Predict model 'custom'"):
            client.predict("custom", ROWS[:1] * 50_000, timeout=0.1)
        assert time.monotonic() - start < 0.1 + 0.3


def test_records_without_a_known_signature_say_how_to_send_them(scripted: Any) -> None:
    """A server that answers no metadata: the client cannot know where records go."""
    with ServingClient(scripted.address, timeout=5, retries=0) as client:
        with pytest.raises(InvalidInputError, match=r"told no signature; give \{input name: \[tfship"):
            client.predict("m", ROWS)
    assert [method for method, _, _ in scripted.calls] == ["GetModelMetadata"]


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, ["client", "predict", *args, "--json"], catch_exceptions=False)


@pytest.mark.parametrize("rest", [False, True], ids=["grpc", "rest"])
def test_the_command_sends_a_records_file_as_examples(custom_server: Any, tmp_path: Path, rest: bool) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    where = ["--rest", "-s", custom_server.rest_url] if rest else ["-s", custom_server.address]
    result = _cli(*where, "-m", "custom", "-i", str(path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["outputs"] == {
        "doubled": [[83.0], [100.0], [80.0]],
        "next": [[4], [1], [8]],
        "island": [["Dream"], ["Biscoe"], [""]],
    }


def test_the_command_names_its_flag_when_values_need_the_schema(custom_server: Any) -> None:
    result = _cli("-s", custom_server.address, "-m", "custom", "-d", '[{"bill": 41}]')
    assert result.exit_code == 2
    assert "give --schema FILE to type them" in result.output and "schema=" not in result.output
    assert len(result.output.strip().splitlines()) == 1
