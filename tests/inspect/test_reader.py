"""read_saved_model on real exports: tag-sets, signatures, tensors, feature specs, errors."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import tfship.inspect
from tfship.errors import ModelError, SignatureNotFoundError
from tfship.inspect import read_saved_model


def test_public_names() -> None:
    assert tfship.inspect.__all__ == sorted(tfship.inspect.__all__)
    assert set(tfship.inspect.__all__) == {
        "BreakingChangeError",
        "Change",
        "CheckFailedError",
        "CheckReport",
        "DEFAULT_DENYLIST",
        "DenylistedOpError",
        "DiffReport",
        "ExampleRequest",
        "FeatureSpecEntry",
        "Finding",
        "MetaGraphInfo",
        "SavedModelInfo",
        "SignatureInfo",
        "TensorInfo",
        "VersionInfo",
        "VersionsReport",
        "check_saved_model",
        "content_hash",
        "describe",
        "diff_saved_models",
        "example_request",
        "list_versions",
        "read_saved_model",
        "render_show",
        "scan_saved_model",
        "read_warmup",
        "write_warmup",
    }
    for name in tfship.inspect.__all__:
        assert getattr(tfship.inspect, name) is not None


def test_canned_parsing_export(exports: dict[str, pathlib.Path]) -> None:
    info = read_saved_model(exports["linear_parsing"])
    mg = info.meta_graph(("serve",))
    assert sorted(mg.signatures) == ["classification", "predict", "regression", "serving_default"]
    sig = mg.signature()
    assert sig.method_name == "tensorflow/serving/classify"
    inp = sig.inputs["inputs"]
    assert (inp.dtype, inp.shape, inp.encoding, inp.name) == (
        "string",
        (None,),
        "dense",
        "input_example_tensor:0",
    )
    assert sig.outputs["scores"].dtype == "float32"
    assert sig.outputs["scores"].shape == (None, 2)
    assert {"ParseExampleV2", "Placeholder", "RestoreV2"} <= mg.ops
    spec = mg.signature("predict").feature_spec
    assert spec is not None
    assert spec["age"].kind == "fixed" and spec["age"].dtype == "float32"
    assert spec["age"].shape == (1,) and spec["age"].default is None and spec["age"].required
    assert spec["color"].kind == "var" and spec["color"].dtype == "string"
    assert set(spec["color"].tensors) == {"indices", "values", "dense_shape"}
    # Every recovered tensor is a real output of a real node of the graph.
    for entry in spec.values():
        for tensor in entry.tensors.values():
            assert tensor.split(":")[0] in mg.nodes


def test_custom_export_sparse_ragged_and_defaults(exports: dict[str, pathlib.Path]) -> None:
    mg = read_saved_model(exports["custom_sparse"]).meta_graph("serve")
    spec = mg.signature().feature_spec
    assert spec is not None
    assert list(spec) == ["age", "ids", "pos", "tags"]
    assert spec["age"].default == [30.0]
    assert (spec["pos"].dtype, spec["pos"].shape, spec["pos"].default) == ("int64", (2,), [0, 1])
    assert spec["ids"].kind == "ragged" and spec["ids"].dtype == "int64"
    assert spec["tags"].kind == "var"
    tensors = [t for e in spec.values() for t in e.tensors.values()]
    assert len(set(tensors)) == len(tensors) == 1 + 1 + 2 + 3
    raw = mg.signature("sparse:serving_default")
    assert raw.feature_spec is None
    tags = raw.inputs["tags"]
    assert tags.encoding == "coo_sparse" and tags.name == ""
    assert tags.shape == (None, None)
    assert set(tags.components) == {"indices", "values", "dense_shape"}
    assert tags.tensor_names == tuple(tags.components.values())


def test_raw_export_has_no_feature_spec(exports: dict[str, pathlib.Path]) -> None:
    mg = read_saved_model(exports["dnn_raw"]).meta_graph()
    assert list(mg.signatures) == ["predict"]
    sig = mg.signature("predict")
    assert sig.feature_spec is None
    assert {k: (t.dtype, t.shape) for k, t in sig.inputs.items()} == {
        "age": ("float32", (None, 1)),
        "color": ("string", (None, 1)),
    }


def test_multi_tag_sets(exports: dict[str, pathlib.Path]) -> None:
    info = read_saved_model(exports["multi_tag"])
    assert sorted(info.tag_sets) == [("eval",), ("serve",), ("train",)]
    assert info.meta_graph("train").signature("train").method_name.endswith("training")
    with pytest.raises(SignatureNotFoundError, match=r"valid tag-sets: .*'eval'.*'serve'"):
        info.meta_graph(("serve", "gpu"))


def test_pbtxt_reads_like_pb(exports: dict[str, pathlib.Path]) -> None:
    info = read_saved_model(exports["linear_text"])
    assert info.file.name == "saved_model.pbtxt"
    other = read_saved_model(exports["linear_parsing"]).meta_graph()
    mg = info.meta_graph()
    assert list(mg.signatures) == list(other.signatures)
    assert mg.signature().feature_spec == other.signature().feature_spec


def test_tf2_exports(exports: dict[str, pathlib.Path]) -> None:
    mg = read_saved_model(exports["tf2_module"]).meta_graph()
    assert sorted(mg.signatures) == ["__saved_model_init_op", "scaled", "serving_default"]
    assert mg.signature().inputs["x"].shape == (None, 3)
    assert "MatMul" in mg.ops  # inside a function called by StatefulPartitionedCall
    keras = read_saved_model(exports["keras"]).meta_graph().signature()
    assert keras.inputs["b"].dtype == "int64"
    assert keras.feature_spec is None


def test_unknown_signature_lists_valid_keys(exports: dict[str, pathlib.Path]) -> None:
    mg = read_saved_model(exports["dnn_raw"]).meta_graph()
    with pytest.raises(SignatureNotFoundError, match="no signature 'serving_default'.*predict"):
        mg.signature()
    with pytest.raises(SignatureNotFoundError, match=r"valid keys: all_class_ids, .*probabilities"):
        mg.signature("predict").output("nope")


def test_missing_and_corrupt(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        read_saved_model(tmp_path / "nope")
    (tmp_path / "base" / "12").mkdir(parents=True)
    with pytest.raises(ModelError, match=r"no SavedModel .*versions 12"):
        read_saved_model(tmp_path / "base")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "saved_model.pb").write_bytes(b"\xff\xff\xff not a proto")
    with pytest.raises(ModelError, match="cannot parse|holds no MetaGraph"):
        read_saved_model(bad)


def test_reading_does_not_import_tensorflow(exports: dict[str, pathlib.Path]) -> None:
    code = (
        "import sys\nfrom tfship.inspect import read_saved_model\n"
        f"mg = read_saved_model({str(exports['linear_parsing'])!r}).meta_graph()\n"
        "assert mg.signature().feature_spec and mg.ops\n"
        "print('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_proto_classes_are_tfships_and_coexist_with_tensorflow(exports: dict[str, pathlib.Path]) -> None:
    # Read first, then import TensorFlow for real: tfship's own classes, the same bytes as
    # TensorFlow's, and a TensorFlow that still loads the export.
    code = (
        "from tfship.inspect import read_saved_model\n"
        f"info = read_saved_model({str(exports['keras'])!r})\n"
        "import tensorflow as tf\n"
        "from tensorflow.core.protobuf import saved_model_pb2\n"
        "assert type(info.proto) is not saved_model_pb2.SavedModel\n"
        "theirs = saved_model_pb2.SavedModel.FromString(info.proto.SerializeToString())\n"
        "assert theirs == saved_model_pb2.SavedModel.FromString(info.file.read_bytes())\n"
        f"assert list(tf.saved_model.load({str(exports['keras'])!r}).signatures)\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
