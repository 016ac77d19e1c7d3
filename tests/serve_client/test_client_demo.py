"""The demo step calls a served export and prints its answer, for classify and predict models."""

from __future__ import annotations

from typing import Any

import pytest

from tfship.serve_client._client_demo import run_demo_step

from .conftest import CLASSIFIER_SCHEMA

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.slow
def test_demo_step_classifies_records_with_the_schema(classifier_server: Any) -> None:
    from tfship.schema import Schema

    lines: list[str] = []
    records = [{"bill": 36, "island": "Dream", "species": "A"}, {"bill": "51.5", "island": "Biscoe"}]
    run_demo_step(
        classifier_server.address,
        "penguins",
        records,
        lines.append,
        schema=Schema.from_dict(CLASSIFIER_SCHEMA),
    )
    text = "\n".join(lines)
    assert "serving_default is tensorflow/serving/classify" in text
    assert "answered by version 1" in text
    assert "record 1: " in text and "(record says A)" in text
    assert lines[-1].startswith("   record 2: ") and lines[-1].split()[2] in {"A", "B", "C"}


def test_demo_step_predicts_with_columns(server: Any) -> None:
    lines: list[str] = []
    run_demo_step(server.address, "m", [{"x": [1.0, 2.0]}, {"x": [0.0, 1.0]}], lines.append)
    text = "\n".join(lines)
    assert "serving_default is tensorflow/serving/predict" in text
    assert "y: [[7.], [4.]]" in text
