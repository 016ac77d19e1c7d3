"""``tfship inspect`` verbs on real exports: JSON, versions, diff, check, scan, request, errors."""

from __future__ import annotations

import json
import pathlib
import re
import shutil

import pytest
from click.testing import CliRunner, Result

from tfship.inspect import read_saved_model

SUBCOMMANDS = ["show", "versions", "diff", "check", "scan", "request"]


def run(*args: str) -> Result:
    from tfship.cli import cli

    return CliRunner().invoke(cli, ["inspect", *args], catch_exceptions=False)


def _copy(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    shutil.copytree(src, dst)
    return dst


def _edit(path: pathlib.Path, change: object) -> None:
    """Rewrite a real export's saved_model.pb after ``change(proto)``."""
    proto = read_saved_model(path).proto
    change(proto)  # type: ignore[operator]
    (path / "saved_model.pb").write_bytes(proto.SerializeToString())


@pytest.mark.parametrize("sub", [None, *SUBCOMMANDS])
def test_help_on_every_subcommand(sub: str | None) -> None:
    result = run(*([sub] if sub else []), "-h")
    assert result.exit_code == 0
    assert "Usage:" in result.output


def test_show_json_schema(exports: dict[str, pathlib.Path]) -> None:
    result = run("show", str(exports["linear_parsing"]), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert (doc["schema"], doc["version"]) == ("tfship.inspect.show", 1)
    mg = doc["meta_graphs"][0]
    assert mg["tags"] == ["serve"]
    sig = mg["signatures"]["serving_default"]
    assert sig["method_name"] == "tensorflow/serving/classify"
    assert sig["inputs"]["inputs"] == {
        "dtype": "string",
        "shape": [None],
        "encoding": "dense",
        "name": "input_example_tensor:0",
        "components": {},
    }
    assert sig["feature_spec"]["age"]["dtype"] == "float32"
    assert sig["feature_spec"]["color"]["kind"] == "var"
    alias = {a["tensor"]: a["uses"] for a in mg["aliases"]}["input_example_tensor:0"]
    assert "predict.inputs.examples" in alias and "serving_default.inputs.inputs" in alias
    assert mg["ops"] == sorted(mg["ops"]) and "ParseExampleV2" in mg["ops"]
    assert doc["variables"]["count"] >= 3 and doc["variables"]["files_bytes"] > 0


def test_show_json_functions(exports: dict[str, pathlib.Path]) -> None:
    doc = json.loads(run("show", str(exports["tf2_module"]), "--json").stdout)
    functions = {f["name"]: f["options"] for f in doc["meta_graphs"][0]["functions"]}
    assert list(functions) == ["__call__", "scaled"]
    spec = {"tensor_spec": {"shape": [None, 3], "dtype": "float32", "name": "x"}}
    assert functions["__call__"][0]["args"] == [spec]
    assert sorted(o["args"][1:] for o in functions["scaled"]) == [[2.0, False], [3.0, True]]
    estimator = json.loads(run("show", str(exports["linear_parsing"]), "--json").stdout)
    assert estimator["meta_graphs"][0]["functions"] == []


def test_show_json_sparse_and_filter(exports: dict[str, pathlib.Path]) -> None:
    path = str(exports["custom_sparse"])
    result = run("show", path, "--json", "--tag-set", "serve", "--signature", "sparse:serving_default")
    doc = json.loads(result.output)
    sigs = doc["meta_graphs"][0]["signatures"]
    assert list(sigs) == ["sparse:serving_default"]
    tags = sigs["sparse:serving_default"]["inputs"]["tags"]
    assert tags["encoding"] == "coo_sparse" and tags["name"] is None
    assert set(tags["components"]) == {"indices", "values", "dense_shape"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "{missing}"], "does not exist"),
        (["show", "{empty}"], "no SavedModel"),
        (["show", "{corrupt}"], "cannot parse|holds no MetaGraph"),
        (["show", "{model}", "--tag-set", "train"], "valid tag-sets: 'serve'"),
        (["show", "{model}", "--tag-set", "serve", "--signature", "nope"], "valid signatures: "),
        (["request", "{sparse}", "--signature", "sparse:serving_default"], "coo_sparse"),
        (["versions", "{model}"], "pass its parent"),
        (["request", "{model}", "--value", "agee=1"], "valid features: age, color"),
        (["request", "{model}", "--value", "age=abc"], "feature 'age': expected float32"),
        (["check", "{model}", "--tag-set", "serve,gpu"], "valid tag-sets: 'serve'"),
    ],
)
def test_errors_are_one_line_exit_2(
    exports: dict[str, pathlib.Path], tmp_path: pathlib.Path, args: list[str], message: str
) -> None:
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "saved_model.pb").write_bytes(b"\x0a\xff\xff\xff\xff garbage")
    (tmp_path / "empty").mkdir()
    values = {
        "missing": str(tmp_path / "missing"),
        "empty": str(tmp_path / "empty"),
        "corrupt": str(corrupt),
        "model": str(exports["linear_parsing"]),
        "sparse": str(exports["custom_sparse"]),
    }
    result = run(*[a.format(**values) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert re.search(message, lines[0])


def test_versions(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    base = tmp_path / "penguins"
    _copy(exports["linear_parsing"], base / "7")
    newer = _copy(exports["linear_parsing"], base / "12")
    (newer / "assets.extra").mkdir()
    meta = {"created_unix": 1_700_000_000.0, "metrics": {"accuracy": 0.9}, "exporter": {"name": "best"}}
    (newer / "assets.extra" / "tfship.json").write_text(json.dumps(meta))
    (base / "temp-123").mkdir()
    (base / "notes.txt").write_text("x")
    result = run("versions", str(base))
    assert result.exit_code == 0
    assert "serves version 12" in result.output
    assert "ignored: temp-123 (not a number)" in result.output
    assert "accuracy=0.9" in result.output and "best" in result.output
    doc = json.loads(run("versions", str(base), "--json").output)
    assert doc["served"] == 12
    assert [v["version"] for v in doc["versions"]] == [7, 12]
    assert doc["versions"][1]["created"] == "2023-11-14T22:13:20+00:00"
    assert {i["name"] for i in doc["ignored"]} == {"temp-123", "notes.txt"}


def test_diff_identical_and_compatible(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    a = exports["linear_parsing"]
    assert run("diff", str(a), str(a)).exit_code == 0
    b = _copy(a, tmp_path / "b")

    def add_signature_and_output(proto: object) -> None:
        mg = proto.meta_graphs[0]  # type: ignore[attr-defined]
        mg.signature_def["extra"].CopyFrom(mg.signature_def["predict"])
        outputs = mg.signature_def["predict"].outputs
        outputs["copy_of_logits"].CopyFrom(outputs["logits"])

    _edit(b, add_signature_and_output)
    result = run("diff", str(a), str(b), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    kinds = {c["kind"]: c["breaking"] for c in doc["changes"]}
    assert kinds == {"signature_added": False, "output_added": False}
    assert doc["breaking"] is False


def test_diff_breaking_exits_3(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    a = exports["dnn_raw"]
    b = _copy(a, tmp_path / "b")

    def change_inputs(proto: object) -> None:
        inputs = proto.meta_graphs[0].signature_def["predict"].inputs  # type: ignore[attr-defined]
        inputs["age"].dtype = 2  # DT_DOUBLE
        inputs["weight"].CopyFrom(inputs["color"])
        inputs["color"].tensor_shape.dim[1].size = -1  # widening an input is compatible

    _edit(b, change_inputs)
    result = run("diff", str(a), str(b))
    assert result.exit_code == 3
    assert "BREAKING    serve/predict/inputs/age: dtype float32 -> float64" in result.output
    assert "BREAKING    serve/predict/inputs/weight: new input" in result.output
    assert "compatible  serve/predict/inputs/color: shape [?, 1] -> [?, ?]" in result.output
    assert result.output.strip().splitlines()[-1].startswith("Error: 2 breaking change(s)")


def test_diff_feature_spec(exports: dict[str, pathlib.Path]) -> None:
    result = run("diff", str(exports["linear_parsing"]), str(exports["dnn_both"]), "--json")
    assert result.exit_code == 3
    doc = json.loads(result.output.split("\nError:")[0])
    where = {(c["kind"], c["where"]) for c in doc["changes"]}
    assert ("feature_type_changed", "serve/predict/features/color") in where
    assert ("feature_default_changed", "serve/predict/features/color") not in where
    assert ("signature_removed", "serve/regression") in where
    assert ("signature_added", "serve/raw:predict") in where


def test_check_ready_and_warmup(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    export = _copy(exports["linear_parsing"], tmp_path / "m" / "5")
    warmup = export / "assets.extra" / "tf_serving_warmup_requests"
    made = run("request", str(export), "--format", "warmup", "--batch", "3", "-o", str(warmup))
    assert made.exit_code == 0, made.output
    result = run("check", str(export), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["ready"] is True and doc["content_hash"].startswith("sha256:")
    findings = {f["check"]: f for f in doc["findings"]}
    assert findings["warmup"]["severity"] == "ok" and "(1 record)" in findings["warmup"]["message"]
    assert findings["registered_ops"]["severity"] == "ok"
    # The same content elsewhere hashes the same; one changed byte does not.
    again = run("check", str(_copy(export, tmp_path / "n" / "6")), "--json")
    assert json.loads(again.output)["content_hash"] == doc["content_hash"]


def test_check_finds_problems(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    export = _copy(exports["linear_parsing"], tmp_path / "staging")
    bad = exports["dnn_both"]
    warmup = export / "assets.extra" / "tf_serving_warmup_requests"
    assert (
        run(
            "request", str(bad), "--signature", "raw:predict", "--format", "warmup", "-o", str(warmup)
        ).exit_code
        == 0
    )
    for file in (export / "variables").glob("variables.data-*"):
        file.unlink()

    def break_classify(proto: object) -> None:
        sig = proto.meta_graphs[0].signature_def["classification"]  # type: ignore[attr-defined]
        sig.outputs["probabilities"].CopyFrom(sig.outputs["scores"])

    _edit(export, break_classify)
    result = run("check", str(export), "--denylist", "ParseExampleV2")
    assert result.exit_code == 3
    text = result.output
    assert "ERROR    version_dir" in text
    assert "ERROR    variables" in text
    assert "ERROR    signature_valid: signature 'classification'" in text
    assert "ERROR    denylisted_ops: denylisted ops used: ParseExampleV2" in text
    assert "ERROR    warmup: warmup record 0 names signature 'raw:predict'" in text
    assert text.strip().splitlines()[-1].startswith("Error: ")


def test_check_warmup_dtype(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    from tfship.inspect import example_request, write_warmup

    export = _copy(exports["dnn_raw"], tmp_path / "m" / "1")
    req = example_request(read_saved_model(export), signature="predict")
    req.grpc.inputs["age"].dtype = 2  # DT_DOUBLE where the signature wants float32
    write_warmup(export / "assets.extra" / "tf_serving_warmup_requests", [req])
    result = run("check", str(export))
    assert result.exit_code == 3
    assert "input 'age' is float64, signature 'predict' expects float32" in result.stdout


def test_scan(exports: dict[str, pathlib.Path]) -> None:
    path = str(exports["tf2_module"])
    clean = run("scan", path)
    assert clean.exit_code == 0
    assert "does not contain the denylisted ops: {'PrintV2', 'ReadFile', 'WriteFile'}" in clean.output
    # MatMul lives only inside a function body: the scan must still find it.
    found = run("scan", path, "--denylist", "MatMul,PyFunc", "--json")
    assert found.exit_code == 3
    doc = json.loads(found.output.split("\nError:")[0])
    assert doc["meta_graphs"] == [{"tags": ["serve"], "found": ["MatMul"]}]


def test_request_rest_and_grpc(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    rest = run("request", str(exports["linear_parsing"]), "--batch", "2")
    assert rest.exit_code == 0
    body = json.loads(rest.output.split("\n", 1)[1])  # after the "# POST ..." line on stderr
    assert body["signature_name"] == "serving_default"
    assert body["examples"] == [{"age": 0.0, "color": [""]}] * 2
    chosen = run("request", str(exports["linear_parsing"]), "--value", "age=33", "--value", "color=red")
    assert json.loads(chosen.output.split("\n", 1)[1])["examples"] == [{"age": 33.0, "color": ["red"]}]
    predict = run("request", str(exports["custom_sparse"]), "--format", "grpc", "-o", str(tmp_path / "r.pb"))
    assert predict.exit_code == 0
    from tensorflow.core.example import example_pb2
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.ParseFromString((tmp_path / "r.pb").read_bytes())
    assert request.model_spec.signature_name == "serving_default"
    example = example_pb2.Example()
    example.ParseFromString(request.inputs["examples"].string_val[0])
    features = example.features.feature
    assert list(features["age"].float_list.value) == [30.0]
    assert list(features["pos"].int64_list.value) == [0, 1]
    raw = run("request", str(exports["keras"]), "--format", "rest")
    instance = json.loads(raw.output.split("\n", 1)[1])["instances"][0]
    assert instance == {"a": [0.0, 0.0], "b": [0]}


def test_warmup_file_is_a_real_tfrecord(exports: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    import tensorflow as tf

    out = tmp_path / "warmup"
    assert (
        run(
            "request", str(exports["dnn_raw"]), "--signature", "predict", "--format", "warmup", "-o", str(out)
        ).exit_code
        == 0
    )
    records = [r.numpy() for r in tf.data.TFRecordDataset(str(out))]
    assert len(records) == 1
    from tensorflow_serving.apis import prediction_log_pb2

    log = prediction_log_pb2.PredictionLog.FromString(records[0])
    assert set(log.predict_log.request.inputs) == {"age", "color"}
    assert tf.make_ndarray(log.predict_log.request.inputs["age"]).shape == (1, 1)
