"""The exporters as drop-ins: a tf.estimator user's own script, with only the class names changed.

The script below is what a ``tf.estimator`` user writes: feature columns, a Keras model inside a
``model_fn``, a Head with a Keras optimizer, ``train_and_evaluate`` with
``EvalSpec(exporters=...)`` built with tf.estimator's own arguments, positionally and by keyword.
It runs in its own process, so that logging is as a fresh program finds it.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from export_helpers import numeric_dirs

pytestmark = pytest.mark.slow

USER_SCRIPT = """
import sys

import numpy as np
import tensorflow as tf
{imports}

tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
model_dir, tie, notes = sys.argv[1], sys.argv[2] == "tie", sys.argv[3]

sex = tf.feature_column.categorical_column_with_vocabulary_list("sex", ["male", "female"])
columns = [tf.feature_column.numeric_column("x"), tf.feature_column.indicator_column(sex)]


def input_fn():
    rng = np.random.default_rng(0)
    x = rng.normal(size=64).astype("float32")
    s = np.where(rng.random(64) > 0.5, "male", "female")
    data = tf.data.Dataset.from_tensor_slices(({{"x": x, "sex": s}}, (x > 0).astype("int64")))
    return data.batch(16).repeat(20)


def model_fn(features, labels, mode, config):
    model = tf.keras.Sequential([tf.keras.layers.DenseFeatures(columns), tf.keras.layers.Dense(1)])
    logits = model(features, training=mode == tf.estimator.ModeKeys.TRAIN)
    optimizer = None
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.keras.optimizers.legacy.Adam(0.05)
        if tie:
            optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return tf.estimator.BinaryClassHead().create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=optimizer, trainable_variables=model.trainable_variables)


def auc_bigger(best_eval_result, current_eval_result):
    return current_eval_result["auc"] > best_eval_result["auc"]


serving_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
    tf.feature_column.make_parse_example_spec(columns))
exporters = [
    tf.estimator.BestExporter(
        name="best", serving_input_receiver_fn=serving_fn,
        event_file_pattern="eval/*.tfevents.*", compare_fn=auc_bigger, exports_to_keep=2),
    tf.estimator.LatestExporter("latest", serving_fn, None, False, None),
    tf.estimator.FinalExporter("final", serving_fn, assets_extra={{"notes.txt": notes}}, as_text=True),
]
est = tf.estimator.Estimator(model_fn, model_dir, tf.estimator.RunConfig(save_checkpoints_steps=10))
tf.estimator.train_and_evaluate(
    est,
    tf.estimator.TrainSpec(input_fn, max_steps=30),
    tf.estimator.EvalSpec(input_fn, steps=2, exporters=exporters, start_delay_secs=0, throttle_secs=0),
)
"""


def _run_user_script(tmp_path: Path, flavour: str, tie: bool = True) -> tuple[Path, Any]:
    """Run the user's script with tf.estimator's exporters or, names swapped, tfship's."""
    script = USER_SCRIPT.format(imports="import tfship.exporters" if flavour == "tfship" else "")
    if flavour == "tfship":
        for name in ("BestExporter", "LatestExporter", "FinalExporter"):
            script = script.replace(f"tf.estimator.{name}(", f"tfship.exporters.{name}(")
    path = tmp_path / f"train_{flavour}.py"
    path.write_text(script)
    notes = tmp_path / "notes.txt"
    notes.write_text("trained by the user's own script\n")
    model_dir = tmp_path / f"model_{flavour}"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run(
        [sys.executable, str(path), str(model_dir), "tie" if tie else "untie", str(notes)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    return model_dir, done


@pytest.mark.parametrize("flavour", ["tf.estimator", "tfship"])
def test_the_users_own_script_exports_with_either_class(tmp_path: Path, flavour: str) -> None:
    model_dir, done = _run_user_script(tmp_path, flavour)
    assert done.returncode == 0, done.stderr[-3000:]
    export = model_dir / "export"
    # evaluations at steps 10, 20 and 30: latest keeps all (exports_to_keep=None), best keeps
    # at most 2, final exports once, as text, with the extra asset
    assert len(numeric_dirs(export / "latest")) == 3
    assert 1 <= len(numeric_dirs(export / "best")) <= 2
    (final,) = numeric_dirs(export / "final")
    assert (export / "final" / final / "saved_model.pbtxt").is_file()
    assert not (export / "final" / final / "saved_model.pb").exists()
    notes = export / "final" / final / "assets.extra" / "notes.txt"
    assert notes.read_text() == "trained by the user's own script\n"
    # the program asked TensorFlow for INFO logs before the exporters loaded it: they stay on
    assert "INFO:tensorflow:Saving dict for global step 30" in done.stderr
    if flavour == "tfship":
        # every decision is visible without configuring any logger
        lines = [line for line in done.stderr.splitlines() if line.startswith("INFO:tfship.exporters:")]
        assert any(line.startswith("INFO:tfship.exporters:best: exported ") for line in lines), lines
        assert "INFO:tfship.exporters:final: skipped: step 10 is not the final evaluation" in lines
        assert any(line.startswith("INFO:tfship.exporters:final: exported ") for line in lines), lines


def test_a_global_step_that_never_moves_fails_with_the_fix(tmp_path: Path) -> None:
    # Without optimizer.iterations tied to the global step, a Keras optimizer trains while the
    # global step stays 0; on finite input the run ends with an evaluation at step 0.
    model_dir, done = _run_user_script(tmp_path, "tfship", tie=False)
    assert done.returncode != 0
    assert "TrainError: tfship.exporters.BestExporter 'best': the evaluation after training" in done.stderr
    assert "optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()" in done.stderr
    assert not numeric_dirs(model_dir / "export" / "best")


def test_the_signatures_are_tf_estimators_then_tfships_keyword_only() -> None:
    import tensorflow as tf

    import tfship.exporters as ours

    for name in ("BestExporter", "LatestExporter", "FinalExporter"):
        theirs = inspect.signature(getattr(tf.estimator, name)).parameters
        mine = inspect.signature(getattr(ours, name)).parameters
        head = list(mine.values())[: len(theirs)]
        assert [p.name for p in head] == list(theirs), name
        for param in head:
            assert param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            if theirs[param.name].default is not inspect.Parameter.empty and param.name != "compare_fn":
                assert param.default == theirs[param.name].default, (name, param.name)
        extras = list(mine.values())[len(theirs) :]
        assert extras and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in extras), name


def test_misuse_names_the_public_class(tmp_path: Path) -> None:
    import tfship.exporters as ours

    def fn() -> None:
        return None

    with pytest.raises(ValueError, match=r"^tfship\.exporters\.BestExporter: exports_to_keep must be"):
        ours.BestExporter("best", fn, exports_to_keep=0)
    with pytest.raises(ValueError, match=r"^tfship\.exporters\.BestExporter 'best_exporter': serving_input"):
        ours.BestExporter()
    with pytest.raises(ValueError, match=r"^tfship\.exporters\.LatestExporter: exports_to_keep"):
        ours.LatestExporter("latest", fn, None, False, -1)
    with pytest.raises(ValueError, match=r"^tfship\.exporters\.BestExporter: compare_fn must accept"):
        ours.BestExporter("best", fn, compare_fn=lambda a, b: True)
    with pytest.raises(ValueError, match=r"^tfship\.exporters\.FinalExporter 'f': assets_extra must be"):
        ours.FinalExporter("f", fn, ["notes.txt"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keep"):
        ours.BestExporter("best", fn, keep=1)  # type: ignore[call-arg]
    assert repr(ours.BestExporter("best", fn)).startswith("<tfship.exporters.BestExporter object")


def test_dir_lists_the_exporters_before_tensorflow_loads() -> None:
    code = (
        "import sys, tfship.exporters as e\n"
        "names = dir(e)\n"
        "print(all(n in names for n in e.__all__), 'tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
