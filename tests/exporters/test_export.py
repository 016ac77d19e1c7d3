"""export_model: versions, staging, verification, metadata, warmup, failures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from export_helpers import STAGING_PREFIX, examples, numeric_dirs, parse_spec, saved_signatures

from tfship.errors import ExportError
from tfship.exporters import (
    CheckpointNotFoundError,
    VerificationError,
    export_model,
    parsing_receiver,
    published_versions,
    raw_receiver,
)
from tfship.inspect import read_warmup


def test_versions_strictly_increase_without_sleeping(classifier: Any, tmp_path: Path) -> None:
    future = int(time.time()) + 1000
    (tmp_path / str(future)).mkdir()  # e.g. a clock that went backwards since
    receiver = parsing_receiver(parse_spec())
    started = time.monotonic()
    first = export_model(classifier, tmp_path, receiver, verify=False)
    second = export_model(classifier, tmp_path, receiver, verify=False)
    assert (first.version, second.version) == (future + 1, future + 2)
    assert time.monotonic() - started < 10


def test_version_by_step_and_explicit_checkpoint(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    result = export_model(
        classifier,
        tmp_path,
        parsing_receiver(parse_spec()),
        checkpoint_path=checkpoints[5],
        version_by="step",
        verify=False,
    )
    assert result.version == 5 and result.global_step == 5
    assert result.checkpoint == checkpoints[5]
    with pytest.raises(ExportError, match="version 5 already exists"):
        export_model(
            classifier,
            tmp_path,
            parsing_receiver(parse_spec()),
            checkpoint_path=checkpoints[5],
            version_by="step",
        )


def test_metadata_file_describes_the_version(classifier: Any, tmp_path: Path) -> None:
    import tensorflow as tf

    result = export_model(
        classifier,
        tmp_path,
        parsing_receiver(parse_spec()),
        eval_result={"auc": 0.75, "loss": float("nan"), "global_step": 10},
        exporter={"name": "manual"},
    )
    meta = json.loads((result.path / "assets.extra" / "tfship.json").read_text())
    assert meta == result.metadata
    assert meta["version"] == result.version and meta["global_step"] == 10
    assert meta["checkpoint"].endswith("model.ckpt-10")
    assert meta["metrics"] == {"auc": 0.75, "loss": "nan", "global_step": 10}
    assert meta["tensorflow"] == tf.__version__ and meta["tfship"]
    assert (
        meta["receiver"]["kind"] == "parsing" and meta["receiver"]["features"]["tags"]["encoding"] == "sparse"
    )
    assert set(meta["signatures"]["written"]) == {
        "serving_default",
        "classification",
        "regression",
        "predict",
    }
    assert meta["exporter"] == {"name": "manual"}
    assert published_versions(tmp_path)[0].metadata == meta


def test_as_text_and_assets_extra(classifier: Any, tmp_path: Path) -> None:
    src = tmp_path / "vocab.txt"
    src.write_bytes(b"a\nb\n")
    result = export_model(
        classifier,
        tmp_path / "out",
        parsing_receiver(parse_spec()),
        as_text=True,
        assets_extra={"nested/dir/vocab.txt": src},
    )
    assert (result.path / "saved_model.pbtxt").exists()
    assert not (result.path / "saved_model.pb").exists()
    assert (result.path / "assets.extra" / "nested" / "dir" / "vocab.txt").read_bytes() == b"a\nb\n"


def test_failed_export_leaves_no_staging_and_no_version(classifier: Any, tmp_path: Path) -> None:
    # tf.estimator leaves temp-<ts> behind when an assets_extra source is missing.
    with pytest.raises(ExportError, match="failed: FileNotFoundError"):
        export_model(
            classifier,
            tmp_path,
            parsing_receiver(parse_spec()),
            assets_extra={"x.txt": tmp_path / "missing.txt"},
        )
    assert list(tmp_path.iterdir()) == []


def test_tf_estimator_leaves_temp_dir_after_failure(classifier: Any, tmp_path: Path) -> None:
    from tensorflow_estimator import estimator

    fn = estimator.export.build_parsing_serving_input_receiver_fn(parse_spec())
    with pytest.raises(Exception):  # noqa: B017 - whatever tf.estimator raises
        classifier.export_saved_model(str(tmp_path), fn, assets_extra={"x": str(tmp_path / "nope")})
    assert [p.name.startswith("temp-") for p in tmp_path.iterdir()] == [True]


def test_stale_staging_is_swept_and_foreign_dirs_survive(classifier: Any, tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{STAGING_PREFIX}123-{dead.pid}"
    stale.mkdir()
    (stale / "saved_model.pb").write_bytes(b"half")
    foreign = [tmp_path / "temp-1", tmp_path / "123", tmp_path / ".meta"]
    for path in foreign:
        path.mkdir()
    export_model(classifier, tmp_path, parsing_receiver(parse_spec()), verify=False)
    assert not stale.exists()
    assert all(p.exists() for p in foreign)


def test_missing_checkpoint_is_a_model_error(tmp_path: Path) -> None:
    from export_helpers import make_classifier

    est = make_classifier(tmp_path / "empty")
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint in model directory"):
        export_model(est, tmp_path / "out", parsing_receiver(parse_spec()))
    with pytest.raises(CheckpointNotFoundError, match=r"expected .*nope\.index"):
        export_model(
            est, tmp_path / "out", parsing_receiver(parse_spec()), checkpoint_path=str(tmp_path / "nope")
        )


def test_warmup_file_is_written_capped_and_replayed(classifier: Any, tmp_path: Path) -> None:
    records = examples(4) * 251  # 1004 records: TF Serving reads at most 1000
    dicts = [{"x": 0.5, "color": "g", "tags": ["a"]}]
    result = export_model(classifier, tmp_path, parsing_receiver(parse_spec()), warmup=records + dicts)
    assert result.warmup_records == 1000
    logs = read_warmup(result.path / "assets.extra" / "tf_serving_warmup_requests")
    assert len(logs) == 1000
    sig = saved_signatures(result.path)["serving_default"]
    assert all(log.WhichOneof("log_type") == "classify_log" for log in logs)
    assert {log.classify_log.request.model_spec.signature_name for log in logs} == {"serving_default"}
    assert sig.method_name == "tensorflow/serving/classify"
    assert result.metadata["warmup"] == {"records": 1000, "signature": "serving_default"}


def test_warmup_for_a_raw_signature_uses_its_input_keys(tmp_path: Path) -> None:
    import tensorflow as tf

    est = _linear_regressor(tmp_path / "m")
    specs = {"x": tf.TensorSpec([None], tf.float32), "y": tf.TensorSpec([None, 2], tf.float32)}
    result = export_model(est, tmp_path / "e", raw_receiver(specs), warmup=[{"x": 1.0, "y": [1, 2]}])
    (log,) = read_warmup(result.path / "assets.extra" / "tf_serving_warmup_requests")
    request = log.predict_log.request
    assert request.model_spec.signature_name == "serving_default"
    assert sorted(request.inputs) == ["x", "y"]
    assert tf.make_ndarray(request.inputs["y"]).shape == (1, 2)


def _linear_regressor(model_dir: Path) -> Any:
    import tensorflow as tf
    from tensorflow_estimator import estimator

    cols = [tf.feature_column.numeric_column("x"), tf.feature_column.numeric_column("y", shape=[2])]
    est = estimator.LinearRegressor(cols, model_dir=str(model_dir))
    features = {"x": [1.0, 2.0], "y": [[1.0, 2.0], [3.0, 4.0]]}
    est.train(lambda: tf.data.Dataset.from_tensors((features, [1.0, 2.0])), steps=2)
    return est


def test_failed_verification_publishes_nothing(classifier: Any, tmp_path: Path) -> None:
    import tensorflow as tf

    bad = tf.train.Example()
    bad.features.feature["x"].bytes_list.value.append(b"not a float")
    with pytest.raises(VerificationError, match="warmup record 0 failed on signature 'serving_default'"):
        export_model(classifier, tmp_path, parsing_receiver(parse_spec()), warmup=[bad])
    assert list(tmp_path.iterdir()) == []
    unverified = export_model(
        classifier, tmp_path, parsing_receiver(parse_spec()), warmup=[bad], verify=False
    )
    assert unverified.verified is False and numeric_dirs(tmp_path) == [str(unverified.version)]


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {helpers!r})
    from export_helpers import examples, make_classifier, parse_spec
    from tfship.exporters import export_model, parsing_receiver
    est = make_classifier({model_dir!r})
    print("ready", flush=True)
    while True:  # export until killed
        export_model(est, {base!r}, parsing_receiver(parse_spec()), warmup=examples(8) * 100)
    """
)


@pytest.mark.slow
def test_kill_mid_export_leaves_no_numeric_dir(classifier: Any, tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    script = _KILL_SCRIPT.format(
        helpers=str(Path(__file__).parent), model_dir=str(classifier.model_dir), base=str(base)
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        staged: list[Path] = []
        while not staged and time.monotonic() < deadline:
            before = set(numeric_dirs(base))
            staged = [p for p in base.iterdir() if p.name.startswith(STAGING_PREFIX)]
            time.sleep(0.005)
        assert staged, "the export never started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    # Whatever was published before the kill is complete; nothing half-written is numeric.
    for name in numeric_dirs(base):
        assert (base / name / "saved_model.pb").exists()
        assert (base / name / "assets.extra" / "tfship.json").exists()
    assert set(numeric_dirs(base)) >= before
    leftovers = [p for p in base.iterdir() if p.name.startswith(STAGING_PREFIX)]
    export_model(classifier, base, parsing_receiver(parse_spec()), verify=False)
    assert all(not p.exists() for p in leftovers)
    assert not [p for p in base.iterdir() if p.name.startswith(STAGING_PREFIX)]
