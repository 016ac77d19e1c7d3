"""Our exports read back through tfship.inspect and run through tfship.loaders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from export_helpers import data, examples, parse_spec, sparse_tags

from tfship.exporters import both_receiver, export_model

pytestmark = pytest.mark.slow


def test_both_receiver_export_inspects_and_runs(classifier: Any, tmp_path: Path) -> None:
    from tfship.inspect import read_saved_model
    from tfship.loaders import load

    result = export_model(classifier, tmp_path, both_receiver(parse_spec()))
    mg = read_saved_model(result.path).meta_graph(("serve",))
    parsing = mg.signature("serving_default")
    assert parsing.feature_spec is not None and sorted(parsing.feature_spec) == ["color", "tags", "x"]
    raw = mg.signature("raw:predict")
    assert raw.inputs["tags"].encoding == "coo_sparse" and raw.inputs["x"].dtype == "float32"
    d = data(3, 9)
    model = load(result.path)
    try:
        by_raw = model.run(
            {"x": d["x"], "color": d["color"].astype(object), "tags": sparse_tags(d["tags"])},
            signature="raw:predict",
        )
        serialized = np.array([e.SerializeToString() for e in examples(3, 9)], dtype=object)
        by_examples = model.run({"examples": serialized}, signature="predict")
    finally:
        model.close()
    np.testing.assert_allclose(by_raw["probabilities"], by_examples["probabilities"], rtol=1e-6)
