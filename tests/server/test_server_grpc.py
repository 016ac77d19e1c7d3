"""The gRPC API against TF Serving 2.15.1's checklist, driven by the official stubs."""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    predict_pb2,
    regression_pb2,
)

pytestmark = pytest.mark.slow


def predict_request(model: str = "module", **inputs: Any) -> Any:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return request


def x_batch(rows: int = 2) -> np.ndarray:
    return np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)


def expect(call: Any, request: Any, code: grpc.StatusCode, message: str | None = None) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call(request, timeout=30)
    assert info.value.code() == code, info.value.details()
    details: str = info.value.details()
    if message is not None:
        assert details == message
    return details


def examples(*values: float) -> Any:
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "linear"
    for value in values:
        example = request.input.example_list.examples.add()
        example.features.feature["x"].float_list.value.append(value)
    return request


# ModelSpec resolution ------------------------------------------------------------------------
def test_predict_defaults_to_latest_version_and_serving_default(stub: Any) -> None:
    response = stub.Predict(predict_request(x=x_batch()), timeout=30)
    assert response.model_spec.name == "module"
    assert response.model_spec.signature_name == "serving_default"
    assert response.model_spec.version.value == 2
    y = tf.make_ndarray(response.outputs["y"])
    np.testing.assert_allclose(y, x_batch() @ np.array([[1.0], [2.0]]) + 2.0)


def test_label_resolves_to_its_version_and_is_not_echoed(stub: Any) -> None:
    request = predict_request(x=x_batch())
    request.model_spec.version_label = "stable"
    response = stub.Predict(request, timeout=30)
    assert response.model_spec.version.value == 1
    assert response.model_spec.WhichOneof("version_choice") == "version"
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["y"])[:, 0], [3.0, 9.0])


def test_version_zero_is_a_specific_request(stub: Any) -> None:
    request = predict_request(x=x_batch())
    request.model_spec.version.value = 0
    expect(
        stub.Predict,
        request,
        grpc.StatusCode.NOT_FOUND,
        "Servable not found for request: Specific(module, 0)",
    )


@pytest.mark.parametrize(
    ("edit", "code", "message"),
    [
        (lambda r: r.ClearField("model_spec"), grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec"),
        (
            lambda r: setattr(r.model_spec, "name", ""),
            grpc.StatusCode.INVALID_ARGUMENT,
            "ModelSpec has no name specified.",
        ),
        (
            lambda r: setattr(r.model_spec, "name", "nope"),
            grpc.StatusCode.NOT_FOUND,
            "Servable not found for request: Latest(nope)",
        ),
        (
            lambda r: setattr(r.model_spec, "version_label", "gold"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "Unrecognized servable version label: gold",
        ),
        (
            lambda r: setattr(r.model_spec, "signature_name", "nope"),
            grpc.StatusCode.FAILED_PRECONDITION,
            'Serving signature key "nope" not found.',
        ),
    ],
)
def test_model_spec_errors(stub: Any, edit: Any, code: grpc.StatusCode, message: str) -> None:
    request = predict_request(x=x_batch())
    edit(request)
    expect(stub.Predict, request, code, message)


# Predict inputs --------------------------------------------------------------------------------
def test_input_count_mismatch_lists_extra_and_missing(stub: Any) -> None:
    request = predict_request(x=x_batch(), z=x_batch())
    expect(
        stub.Predict,
        request,
        grpc.StatusCode.INVALID_ARGUMENT,
        "input size does not match signature: 2!=1 len({x,z}) != len({x}). Sent extra: {z}. "
        "Missing but required: {}.",
    )


def test_input_with_wrong_name_names_the_alias(stub: Any) -> None:
    request = predict_request(a=np.ones([1], np.float32), c=np.ones([1], np.int64))
    request.model_spec.signature_name = "pair"
    details = expect(stub.Predict, request, grpc.StatusCode.INVALID_ARGUMENT)
    assert details.startswith("Signature input alias: b(feed name: ")
    assert details.endswith(
        ") not found in request and no default value provided. Inputs expected to be in the "
        "request {a,c}, or default input alias set: "
    )


def test_float64_is_rejected_not_cast(stub: Any) -> None:
    request = predict_request(x=x_batch().astype(np.float64))
    expect(
        stub.Predict,
        request,
        grpc.StatusCode.INVALID_ARGUMENT,
        "Expects arg[0] to be float but double is provided",
    )


def test_unparsable_tensor_is_a_parsing_error(stub: Any) -> None:
    request = predict_request()
    proto = request.inputs["x"]
    proto.dtype = tf.float32.as_datatype_enum
    proto.tensor_shape.dim.add().size = 1
    proto.tensor_content = b"\x00" * 3  # FromProto needs exactly 4 bytes for one float
    expect(stub.Predict, request, grpc.StatusCode.INVALID_ARGUMENT, "tensor parsing error: x")


def test_typed_values_beyond_the_shape_are_cut_as_fromproto_does(stub: Any) -> None:
    request = predict_request()
    proto = request.inputs["x"]
    proto.dtype = tf.float32.as_datatype_enum
    for size in (1, 2):
        proto.tensor_shape.dim.add().size = size
    proto.float_val.extend([1.0, 2.0, 3.0, 4.0])  # two more than [1, 2] holds
    response = stub.Predict(request, timeout=30)
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["doubled"]), [[2.0, 4.0]])


def test_short_typed_values_are_padded_with_the_last_one(stub: Any) -> None:
    request = predict_request()
    proto = request.inputs["x"]
    proto.dtype = tf.float32.as_datatype_enum
    for size in (3, 2):
        proto.tensor_shape.dim.add().size = size
    proto.float_val.append(1.0)
    response = stub.Predict(request, timeout=30)
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["y"])[:, 0], [5.0] * 3)


def test_tensor_content_input_is_accepted(stub: Any) -> None:
    request = predict_request()
    proto = request.inputs["x"]
    proto.dtype = tf.float32.as_datatype_enum
    for size in (1, 2):
        proto.tensor_shape.dim.add().size = size
    proto.tensor_content = np.array([[1.0, 1.0]], np.float32).tobytes()
    response = stub.Predict(request, timeout=30)
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["y"]), [[5.0]])


def test_a_checked_predict_answers_the_same_bytes_on_every_path(channel: grpc.Channel) -> None:
    # The first request of a signature takes the full checks and plans the signature; the
    # next take the plan; an output filter always takes the full checks. The answers agree
    # byte for byte, for a tensor in tensor_content as for the same values in float_val.
    raw = channel.unary_unary(
        "/tensorflow.serving.PredictionService/Predict",
        request_serializer=lambda message: message.SerializeToString(),
        response_deserializer=lambda data: data,
    )
    typed = predict_request(x=x_batch(3))
    content = predict_request()
    content.inputs["x"].dtype = tf.float32.as_datatype_enum
    for size in (3, 2):
        content.inputs["x"].tensor_shape.dim.add().size = size
    content.inputs["x"].tensor_content = x_batch(3).tobytes()
    filtered = predict_request(x=x_batch(3))
    filtered.output_filter.extend(["doubled", "y"])
    answers = [raw(request, timeout=30) for request in (typed, typed, content, content, filtered)]
    assert len(set(answers)) == 1
    response = predict_pb2.PredictResponse.FromString(answers[0])
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["doubled"]), x_batch(3) * 2)


def test_content_of_an_empty_shape_is_not_read_as_fromproto_does(stub: Any) -> None:
    request = predict_request()
    proto = request.inputs["x"]
    proto.dtype = tf.float32.as_datatype_enum
    for size in (0, 2):
        proto.tensor_shape.dim.add().size = size
    proto.tensor_content = b"\x00" * 8  # FromProto reads no content for zero elements
    for _ in range(2):  # the full checks, then the plan
        response = stub.Predict(request, timeout=30)
        assert tf.make_ndarray(response.outputs["doubled"]).shape == (0, 2)


def test_wrong_rank_is_invalid_argument(stub: Any) -> None:
    request = predict_request(x=np.ones([2, 3], np.float32))
    expect(stub.Predict, request, grpc.StatusCode.INVALID_ARGUMENT)


# Predict outputs -----------------------------------------------------------------------------
def test_outputs_use_typed_fields_never_tensor_content(stub: Any) -> None:
    response = stub.Predict(predict_request(x=x_batch(3)), timeout=30)
    for alias, proto in response.outputs.items():
        assert proto.tensor_content == b"", alias
        assert proto.dtype == tf.float32.as_datatype_enum
        assert len(proto.float_val) == int(np.prod([d.size for d in proto.tensor_shape.dim]))
    assert [d.size for d in response.outputs["doubled"].tensor_shape.dim] == [3, 2]


def test_string_and_int_outputs_use_string_val_and_int_val(stub: Any) -> None:
    request = predict_request(text=np.array([b"ab", b"xyz"], dtype=object))
    request.model_spec.signature_name = "strings"
    response = stub.Predict(request, timeout=30)
    assert list(response.outputs["upper"].string_val) == [b"AB", b"XYZ"]
    assert list(response.outputs["length"].int_val) == [2, 3]
    assert response.outputs["length"].dtype == tf.int32.as_datatype_enum


def test_output_filter_runs_only_the_named_outputs(stub: Any) -> None:
    request = predict_request(x=x_batch())
    request.output_filter.append("doubled")
    response = stub.Predict(request, timeout=30)
    assert sorted(response.outputs) == ["doubled"]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (
            ["nope"],
            "output tensor alias not found in signature: nope Outputs expected to be in the set {doubled,y}.",
        ),
        (["y", "y"], "duplicate output tensor alias: y"),
    ],
)
def test_output_filter_errors(stub: Any, names: list[str], message: str) -> None:
    request = predict_request(x=x_batch())
    request.output_filter.extend(names)
    expect(stub.Predict, request, grpc.StatusCode.INVALID_ARGUMENT, message)


def test_predict_works_on_a_classification_signature(stub: Any) -> None:
    # the method-name check is off by default in TF Serving 2.15.1
    example = examples(1.0).input.example_list.examples[0].SerializeToString()
    request = predict_request("linear", inputs=np.array([example], dtype=object))
    request.model_spec.signature_name = "classification"
    response = stub.Predict(request, timeout=30)
    assert sorted(response.outputs) == ["classes", "scores"]


# Classify / Regress ----------------------------------------------------------------------------
def test_classify_returns_one_entry_per_example(stub: Any) -> None:
    response = stub.Classify(examples(0.0, 3.0), timeout=30)
    assert response.model_spec.signature_name == "serving_default"
    assert response.model_spec.version.value == 1
    rows = response.result.classifications
    assert len(rows) == 2
    assert [c.label for c in rows[0].classes] == ["0", "1"]
    for row in rows:
        assert sum(c.score for c in row.classes) == pytest.approx(1.0, abs=1e-5)


def test_classify_with_context_merges_features(stub: Any) -> None:
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "linear"
    context = request.input.example_list_with_context
    context.context.features.feature["x"].float_list.value.append(3.0)
    context.examples.add()
    context.examples.add().features.feature["x"].float_list.value.append(0.0)
    with_context = stub.Classify(request, timeout=30).result.classifications
    plain = stub.Classify(examples(3.0, 0.0), timeout=30).result.classifications
    for got, want in zip(with_context, plain):
        assert [c.score for c in got.classes] == pytest.approx([c.score for c in want.classes])


@pytest.mark.parametrize(
    ("signature", "code", "message"),
    [
        ("nope", grpc.StatusCode.INVALID_ARGUMENT, "No signature was found with the name: nope"),
        # classifier.cc's PreProcessClassification: errors::InvalidArgument in 2.15.1
        ("regression", grpc.StatusCode.INVALID_ARGUMENT, None),
        ("predict", grpc.StatusCode.INVALID_ARGUMENT, None),
    ],
)
def test_classify_signature_rules(
    stub: Any, signature: str, code: grpc.StatusCode, message: str | None
) -> None:
    request = examples(1.0)
    request.model_spec.signature_name = signature
    details = expect(stub.Classify, request, code, message)
    if signature == "regression":
        assert details.startswith(
            'Expected classification signature outputs to contain at least one of "classes" or '
            '"scores". Signature was: '
        )
    if signature == "predict":
        assert details.startswith("Expected one or two output Tensors, found ")


def test_classify_without_examples_is_empty_input(stub: Any) -> None:
    expect(stub.Classify, examples(), grpc.StatusCode.INVALID_ARGUMENT, "Input is empty.")


def test_classify_without_model_spec(stub: Any) -> None:
    request = examples(1.0)
    request.ClearField("model_spec")
    expect(stub.Classify, request, grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec")


def test_regress_on_regression_signature(stub: Any) -> None:
    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "linear"
    request.model_spec.signature_name = "regression"
    request.input.CopyFrom(examples(0.0, 3.0).input)
    response = stub.Regress(request, timeout=30)
    assert response.model_spec.signature_name == "regression"
    values = [r.value for r in response.result.regressions]
    scores = stub.Classify(examples(0.0, 3.0), timeout=30).result.classifications
    assert values == pytest.approx([row.classes[1].score for row in scores], abs=1e-5)


def test_regress_on_classification_signature_needs_one_output(stub: Any) -> None:
    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "linear"
    request.input.CopyFrom(examples(1.0).input)
    expect(stub.Regress, request, grpc.StatusCode.INVALID_ARGUMENT, "Expected one output Tensor.")


# MultiInference --------------------------------------------------------------------------------
def multi(*tasks: tuple[str, str, str]) -> Any:
    request = inference_pb2.MultiInferenceRequest()
    for model, signature, method in tasks:
        task = request.tasks.add()
        task.model_spec.name = model
        task.model_spec.signature_name = signature
        task.method_name = method
    request.input.CopyFrom(examples(0.5, 2.5).input)
    return request


CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"


def test_multi_inference_runs_every_task(stub: Any) -> None:
    response = stub.MultiInference(
        multi(("linear", "classification", CLASSIFY), ("linear", "regression", REGRESS)),
        timeout=30,
    )
    first, second = response.results
    assert first.model_spec.signature_name == "classification"
    assert second.model_spec.version.value == 1
    assert len(first.classification_result.classifications) == 2
    assert [r.value for r in second.regression_result.regressions] == pytest.approx(
        [c.classes[1].score for c in first.classification_result.classifications], abs=1e-5
    )


@pytest.mark.parametrize(
    ("tasks", "code", "message"),
    [
        ((), grpc.StatusCode.INVALID_ARGUMENT, "ModelSpec has no name specified."),
        (
            (("linear", "classification", CLASSIFY), ("module", "regression", REGRESS)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "All ModelSpecs in a MultiInferenceRequest must access the same model name.",
        ),
        (
            (("linear", "classification", CLASSIFY), ("linear", "classification", CLASSIFY)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "Duplicate evaluation of signature: classification",
        ),
        (
            (("linear", "nope", CLASSIFY),),
            grpc.StatusCode.INVALID_ARGUMENT,
            "Requested signature not found in model graph: nope",
        ),
        (
            (("linear", "predict", "tensorflow/serving/predict"),),
            grpc.StatusCode.UNIMPLEMENTED,
            "Unsupported signature method_name: tensorflow/serving/predict",
        ),
    ],
)
def test_multi_inference_errors(
    stub: Any, tasks: tuple[Any, ...], code: grpc.StatusCode, message: str
) -> None:
    expect(stub.MultiInference, multi(*tasks), code, message)


# GetModelMetadata ------------------------------------------------------------------------------
def metadata_request(model: str = "module", *fields: str) -> Any:
    request = get_model_metadata_pb2.GetModelMetadataRequest()
    request.model_spec.name = model
    request.metadata_field.extend(fields)
    return request


def test_metadata_packs_every_signature_including_init_op(stub: Any, module_base: Any) -> None:
    response = stub.GetModelMetadata(metadata_request("module", "signature_def"), timeout=30)
    assert response.model_spec.name == "module"
    assert response.model_spec.version.value == 2
    assert response.model_spec.signature_name == ""
    packed = response.metadata["signature_def"]
    assert packed.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    signatures = get_model_metadata_pb2.SignatureDefMap()
    packed.Unpack(signatures)
    assert sorted(signatures.signature_def) == ["__saved_model_init_op", "pair", "serving_default", "strings"]
    init = signatures.signature_def["__saved_model_init_op"]
    assert init.method_name == "" and not init.inputs
    assert init.outputs["__saved_model_init_op"].tensor_shape.unknown_rank
    x = signatures.signature_def["serving_default"].inputs["x"]
    assert x.dtype == tf.float32.as_datatype_enum
    assert [d.size for d in x.tensor_shape.dim] == [-1, 2]
    # the same bytes the SavedModel holds, not a reconstruction
    from tensorflow.python.tools import saved_model_utils

    on_disk = saved_model_utils.get_meta_graph_def(str(module_base / "2"), "serve")
    assert signatures.signature_def["serving_default"] == on_disk.signature_def["serving_default"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ((), "GetModelMetadataRequest must specify at least one metadata_field"),
        (("signature_def", "graph"), "Metadata field graph is not supported"),
    ],
)
def test_metadata_field_errors(stub: Any, fields: tuple[str, ...], message: str) -> None:
    # the field checks come before the servable lookup: even an unknown model gets them
    expect(
        stub.GetModelMetadata, metadata_request("nope", *fields), grpc.StatusCode.INVALID_ARGUMENT, message
    )


def test_metadata_unknown_model(stub: Any) -> None:
    expect(
        stub.GetModelMetadata,
        metadata_request("nope", "signature_def"),
        grpc.StatusCode.NOT_FOUND,
        "Servable not found for request: Latest(nope)",
    )


# GetModelStatus --------------------------------------------------------------------------------
def status_request(model: str, version: int | None = None, label: str | None = None) -> Any:
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = model
    if version is not None:
        request.model_spec.version.value = version
    if label is not None:
        request.model_spec.version_label = label
    return request


def test_status_lists_versions_newest_first(model_stub: Any) -> None:
    response = model_stub.GetModelStatus(status_request("module"), timeout=30)
    assert [v.version for v in response.model_version_status] == [2, 1]
    for entry in response.model_version_status:
        assert entry.state == get_model_status_pb2.ModelVersionStatus.AVAILABLE
        assert entry.status.error_code == 0 and entry.status.error_message == ""


def test_status_ignores_the_label(model_stub: Any) -> None:
    response = model_stub.GetModelStatus(status_request("module", label="stable"), timeout=30)
    assert len(response.model_version_status) == 2


def test_status_of_one_version(model_stub: Any) -> None:
    response = model_stub.GetModelStatus(status_request("module", 1), timeout=30)
    assert [v.version for v in response.model_version_status] == [1]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (status_request("module", 7), "Could not find version 7 of model module"),
        (status_request("nope"), "Could not find any versions of model nope"),
    ],
)
def test_status_not_found(model_stub: Any, request_: Any, message: str) -> None:
    expect(model_stub.GetModelStatus, request_, grpc.StatusCode.NOT_FOUND, message)


def test_status_without_model_spec(model_stub: Any) -> None:
    expect(
        model_stub.GetModelStatus,
        get_model_status_pb2.GetModelStatusRequest(),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Missing ModelSpec",
    )


def test_tensor_proto_class_is_tensorflows(stub: Any) -> None:
    # clients build requests with tf.make_tensor_proto; the server must take that class as is
    assert isinstance(tf.make_tensor_proto(1.0), tensor_pb2.TensorProto)


def test_dtype_is_checked_after_the_output_filter(stub: Any) -> None:
    # TF checks feed dtypes when the session runs: a bad output_filter is reported first
    request = predict_request(x=x_batch().astype(np.float64))
    request.output_filter.append("nope")
    details = expect(stub.Predict, request, grpc.StatusCode.INVALID_ARGUMENT)
    assert details.startswith("output tensor alias not found in signature: nope")


@pytest.mark.parametrize(
    "method", ["/tensorflow.serving.PredictionService/Predict", "/inference.GRPCInferenceService/ModelInfer"]
)
def test_a_request_that_does_not_parse_ends_as_grpc_ends_it(channel: grpc.Channel, method: str) -> None:
    """Both services parse their requests in the worker: bytes that are no message end the call
    as gRPC's own deserializer would (INTERNAL), and the server answers the next call."""
    call = channel.unary_unary(method, request_serializer=bytes, response_deserializer=bytes)
    with pytest.raises(grpc.RpcError) as caught:
        call(b"\xff\xff\xff", timeout=30)
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert caught.value.details() == "Exception deserializing request!"
    with pytest.raises(grpc.RpcError) as empty:  # an empty message parses, and names no model
        call(b"", timeout=30)
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT
