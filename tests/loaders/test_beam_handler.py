"""A Beam user imports tfship's ModelHandler by its public name and runs it in a pipeline."""

from __future__ import annotations

from typing import Any

import apache_beam  # noqa: F401  (make test installs Beam on both lanes: one missing fails here)
import pytest

pytestmark = pytest.mark.slow


def test_local_model_handler_in_run_inference(tiny_model: Any) -> None:
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference
    from apache_beam.testing.util import assert_that, equal_to

    from tfship.loaders.beam import LocalModelHandler

    rows = [
        {
            "island": "Dream",
            "bill_length_mm": 39.1,
            "bill_depth_mm": 18.7,
            "flipper_length_mm": 181,
            "body_mass_g": 3750,
            "sex": "male",
            "year": 2007,
        }
    ] * 3
    handler = LocalModelHandler(str(tiny_model.export("final")), "predict", ["classes"], batch_size=2)
    with beam.Pipeline() as pipeline:
        classes = (
            pipeline
            | beam.Create(rows)
            | RunInference(handler)
            | beam.Map(lambda result: len(result.inference["classes"]))
        )
        assert_that(classes, equal_to([1, 1, 1]))


def test_local_model_handler_leaves_out_a_label_when_asked(tiny_model: Any) -> None:
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference
    from apache_beam.testing.util import assert_that, equal_to

    from tfship.loaders.beam import LocalModelHandler

    row = {
        "island": "Dream",
        "bill_length_mm": 39.1,
        "bill_depth_mm": 18.7,
        "flipper_length_mm": 181,
        "body_mass_g": 3750,
        "sex": "male",
        "year": 2007,
        "species": "Adelie",
    }
    export = str(tiny_model.export("final"))
    for ignore, want in ((True, ["ok", "ok"]), (False, ["refused", "refused"])):
        handler = LocalModelHandler(export, "predict", ["classes"], batch_size=2, ignore_unknown=ignore)
        with beam.Pipeline() as pipeline:
            seen = (
                pipeline
                | beam.Create([row, row])
                | RunInference(handler)
                | beam.Map(lambda result: "ok" if "classes" in result.inference else "refused")
            )
            assert_that(seen, equal_to(want))
