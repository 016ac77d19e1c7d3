"""The Open Inference Protocol's tensors: datatypes, raw bytes, typed contents and JSON data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tfship._wire import numpy_dtype, protos
from tfship._wire._v2 import (
    V2_DATATYPES,
    V2TensorError,
    array_from_contents,
    array_from_json,
    array_from_raw,
    encode_infer_response,
    fill_contents,
    json_data,
    raw_bytes,
    raw_contents_field,
    v2_datatype,
)


def sample(datatype: str) -> np.ndarray:
    if datatype == "BYTES":
        return np.array([[b"", b"a"], ["\u00e9".encode(), b"\x00\xff"]], object)
    if datatype == "BOOL":
        return np.array([[True, False], [False, True]])
    dtype = numpy_dtype(V2_DATATYPES[datatype])
    return np.array([[0, 1], [2, 3]]).astype(dtype)


def test_every_datatype_maps_both_ways() -> None:
    assert sorted(V2_DATATYPES) == sorted(
        ["BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"]
        + ["FP16", "FP32", "FP64", "BYTES", "BF16"]
    )
    for name, enum in V2_DATATYPES.items():
        assert v2_datatype(enum) == name
    assert v2_datatype(8) is None  # complex64 has no V2 datatype


@pytest.mark.parametrize("datatype", list(V2_DATATYPES))
def test_raw_bytes_round_trip(datatype: str) -> None:
    value = sample(datatype)
    back = array_from_raw(raw_bytes(value), datatype, [2, 2], "t")
    assert back.shape == (2, 2) and back.dtype == value.dtype
    assert back.tolist() == value.tolist()


def test_raw_bytes_are_little_endian_and_length_prefixed() -> None:
    assert raw_bytes(np.array([1], ">i4")) == b"\x01\x00\x00\x00"
    assert raw_bytes(np.array([b"ab", b""], object)) == b"\x02\x00\x00\x00ab\x00\x00\x00\x00"


@pytest.mark.parametrize(
    ("raw", "datatype", "shape", "message"),
    [
        (b"\x00" * 7, "FP32", [2], r"shape \[2\] of FP32 needs 8 bytes, got 7"),
        (b"\x02\x00\x00", "BYTES", [1], "ends inside an element's 4-byte length"),
        (b"\x05\x00\x00\x00ab", "BYTES", [1], "a BYTES element of 5 bytes runs past the end"),
        (b"\x01\x00\x00\x00a", "BYTES", [2], r"shape \[2\] needs 2 elements, got 1"),
        (b"", "FP8", [0], "datatype 'FP8' is not one of BOOL"),
        (b"", "FP32", [-1], "negative dimension"),
    ],
)
def test_raw_bytes_that_do_not_fit_are_refused(
    raw: bytes, datatype: str, shape: list[int], message: str
) -> None:
    with pytest.raises(V2TensorError, match=message):
        array_from_raw(raw, datatype, shape, "t")


@pytest.mark.parametrize("datatype", [d for d in V2_DATATYPES if d not in ("FP16", "BF16")])
def test_typed_contents_round_trip(datatype: str) -> None:
    contents = protos().grpc_service_pb2.InferTensorContents()
    value = sample(datatype)
    fill_contents(contents, value, datatype)
    back = array_from_contents(contents, datatype, [2, 2], "t")
    assert back.dtype == value.dtype and back.tolist() == value.tolist()


def test_contents_in_the_wrong_field_or_out_of_range_are_refused() -> None:
    contents: Any = protos().grpc_service_pb2.InferTensorContents(fp32_contents=[1.0])
    with pytest.raises(V2TensorError, match="INT32 elements belong in int_contents, not fp32_contents"):
        array_from_contents(contents, "INT32", [1], "t")
    with pytest.raises(V2TensorError, match="value 300 is out of the range of int8"):
        array_from_contents(
            protos().grpc_service_pb2.InferTensorContents(int_contents=[300]), "INT8", [1], "t"
        )
    with pytest.raises(V2TensorError, match="FP16 elements travel only as raw contents"):
        array_from_contents(contents, "FP16", [1], "t")


def test_json_data_flat_or_nested() -> None:
    flat = array_from_json([1, 2, 3, 4], "FP32", [2, 2], "t")
    nested = array_from_json([[1, 2], [3, 4]], "FP32", [2, 2], "t")
    assert flat.dtype == np.float32 and flat.tolist() == nested.tolist() == [[1, 2], [3, 4]]
    assert array_from_json([True, False], "BOOL", [2], "t").tolist() == [True, False]
    big = array_from_json([0, 2**64 - 1], "UINT64", [2], "t")
    assert big.tolist() == [0, 2**64 - 1]  # no digit lost through a float


@pytest.mark.parametrize(
    ("data", "datatype", "shape", "message"),
    [
        ([1.5, 2], "INT32", [2], "INT32 data must be integers"),
        ([1, 300], "UINT8", [2], "value 300 is out of the range of uint8"),
        ([2**63, -1], "INT64", [2], "value 9223372036854775808 is out of the range of int64"),
        ([1, 2, 3], "FP32", [2, 2], r"shape \[2, 2\] needs 4 elements, got 3"),
        ([[1, 2], [3]], "FP32", [3], "ragged"),
        (["a"], "FP32", [1], "FP32 data must be numbers"),
        ([1], "BYTES", [1], "BYTES data must be strings"),
        ([1], "BOOL", [1], "BOOL data must be true or false"),
    ],
)
def test_json_data_that_does_not_fit_is_refused(
    data: Any, datatype: str, shape: list[int], message: str
) -> None:
    with pytest.raises(V2TensorError, match=message):
        array_from_json(data, datatype, shape, "t")


def test_json_answers_bytes_as_text_only() -> None:
    assert json_data(np.array([b"a", "\u00e9".encode()], object), "BYTES", "o") == ["a", "\u00e9"]
    with pytest.raises(V2TensorError, match="output 'o' holds bytes that are not UTF-8 text"):
        json_data(np.array([b"\xff"], object), "BYTES", "o")
    assert json_data(np.array([0.5], np.float16), "FP16", "o") == [0.5]


@pytest.mark.parametrize("datatype", list(V2_DATATYPES))
def test_raw_contents_field_adds_entries_to_a_serialized_answer(datatype: str) -> None:
    answer = protos().grpc_service_pb2.ModelInferResponse
    value = sample(datatype)
    head = answer(model_name="m").SerializeToString()
    parsed = answer.FromString(raw_contents_field(6, [value, value[:1]], head))
    assert parsed.model_name == "m"
    assert list(parsed.raw_output_contents) == [raw_bytes(value), raw_bytes(value[:1])]


@pytest.mark.parametrize("request_id", ["", "42", "\u00e9" * 200])
@pytest.mark.parametrize("batch", [0, 1, 3, 300])
def test_an_infer_response_is_the_message_protobuf_writes(request_id: str, batch: int) -> None:
    """Written field by field with its headers kept per shape: the same message protobuf
    builds, for any id, any batch (a long dimension's varint) and every datatype at once;
    with one parameter (no map order to differ in) the very bytes protobuf writes."""
    answer = protos().grpc_service_pb2.ModelInferResponse
    outputs = [(f"out_{d.lower()}", d, np.resize(sample(d), (batch, 2))) for d in V2_DATATYPES]
    for parameters in ({"signature_name": "serving_default"}, {"signature_name": "s", "other": "\u00e9"}):
        want = answer(model_name="m", model_version="12", id=request_id)
        for key, text in parameters.items():
            want.parameters[key].string_param = text
        for name, datatype, array in outputs:
            want.outputs.add(name=name, datatype=datatype, shape=array.shape)
            want.raw_output_contents.append(raw_bytes(array))
        for _ in range(2):  # built, then from the kept headers
            data = encode_infer_response("m", "12", request_id, parameters, outputs)
            assert answer.FromString(data) == want
            if len(parameters) == 1:
                assert data == want.SerializeToString()
