"""``XlaCallModule`` graphs (what a JAX export runs) and the StableHLO inside them, on each lane.

A graph whose StableHLO is what this TensorFlow reads is ready, loads and runs; one whose
StableHLO is newer (the committed JAX-backend export, v1.18.0) is refused at load, and when
run anyway (``loader="session"``, as ``tfship serve`` runs it) its failure is the model's, not
its inputs'.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfship.errors import ModelError, ModelInputError
from tfship.inspect import check_saved_model
from tfship.loaders import load

pytestmark = pytest.mark.slow

NEWTF = Path(__file__).resolve().parents[1] / "fixtures" / "newtf"
JAX = json.loads((NEWTF / "expected.json").read_text())["models"]["keras_jax_export"]
#: The newest StableHLO each shipped TensorFlow deserializes (its StableHLO bindings say so).
READS = {"2.15.1": "0.14.24", "2.21.0": "1.13.7"}

DOUBLE = """
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""


@pytest.fixture(scope="module")
def doubling(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SavedModel whose signature runs an ``XlaCallModule`` of the newest version this
    TensorFlow runs, holding StableHLO written for the newest version it reads."""
    import tensorflow as tf
    from tensorflow.compiler.mlir.stablehlo import stablehlo
    from tensorflow.compiler.tf2xla.python import xla

    serialize = getattr(stablehlo, "serialize_portable_artifact_str", None)
    serialize = serialize or stablehlo.serialize_portable_artifact  # TF 2.15's name
    module = serialize(DOUBLE, stablehlo.get_current_version())
    assert module.startswith(b"ML\xefR") and f"StableHLO_v{READS[version('tensorflow')]}\0".encode() in module
    newest = xla.call_module_maximum_supported_version()

    class Doubling(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32, name="x")], autograph=False)
        def double(self, x: Any) -> dict[str, Any]:
            (y,) = xla.call_module(
                [x], version=newest, module=module, Tout=[tf.float32], Sout=[(2,)], platforms=["CPU"]
            )
            return {"y": y}

    doubling = Doubling()
    export = tmp_path_factory.mktemp("doubling") / "1"
    tf.saved_model.save(doubling, str(export), signatures=doubling.double)
    return export


def test_a_stablehlo_this_tensorflow_reads_is_ready_and_runs(doubling: Path) -> None:
    installed = version("tensorflow")
    report = check_saved_model(doubling)
    assert not report.errors, [f.message for f in report.errors]
    checks = {f.check: f for f in report.findings}
    reads = READS[installed]
    assert (checks["stablehlo"].severity, checks["stablehlo"].message) == (
        "ok",
        f"XlaCallModule holds StableHLO v{reads}; this TensorFlow ({installed}) deserializes up to v{reads}",
    )
    with load(doubling.parent) as model:
        np.testing.assert_array_equal(model.run({"x": [1.0, 2.5]})["y"], [2.0, 5.0])
        # an input the graph refuses is still the inputs' fault
        with pytest.raises(ModelInputError, match="^the model rejected its inputs: "):
            model.run({"x": [1.0, 2.0, 3.0]})


def test_a_computation_tensorflow_cannot_deserialize_is_the_models_failure() -> None:
    import tensorflow as tf

    # TensorFlow's error code says INVALID_ARGUMENT, but no input could make this call succeed
    with load(NEWTF / "keras_jax_export", loader="session") as model:
        feeds = {k: np.asarray(v, np.float32) for k, v in JAX["inputs"]["serving_default"].items()}
        with pytest.raises(ModelError, match="^the model failed: Cannot deserialize computation") as failed:
            model.run(feeds)
    assert not isinstance(failed.value, ModelInputError)
    # TensorFlow's own error stays the cause: `tfship serve` answers with its code, as TF Serving does
    assert isinstance(failed.value.__cause__, tf.errors.InvalidArgumentError)
    if version("tensorflow") == "2.21.0":  # the TensorFlow that exported it, which fails the same way
        assert str(failed.value) == f"the model failed: {JAX['error']}"
