"""JSON to tensors and Examples, with json_tensor.cc's rules and messages."""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np
import pytest
from tensorflow.core.example import example_pb2
from tensorflow.core.framework import tensor_pb2

from tfship._wire import decode_tensor as to_ndarray
from tfship.server._rest import _example_from_json, _tensor_from_json
from tfship.server._status import RpcError

FLOAT, DOUBLE, INT32, UINT8, STRING, INT64, BOOL, HALF, UINT32, UINT64 = (
    1, 2, 3, 4, 7, 9, 10, 19, 22, 23
)


def tensor(value: Any, dtype: int) -> np.ndarray:
    proto, shape, _ = _tensor_from_json(value, dtype, tensor_pb2.TensorProto)
    for size in shape:
        proto.tensor_shape.dim.add().size = size
    return to_ndarray(proto)


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        ([[1, 2.5]], FLOAT, np.array([[1.0, 2.5]], np.float32)),
        ([1e300], DOUBLE, np.array([1e300])),
        ([-(2**31), 2**31 - 1], INT32, np.array([-(2**31), 2**31 - 1], np.int32)),
        ([2**63 - 1], INT64, np.array([2**63 - 1], np.int64)),
        ([2**64 - 1], UINT64, np.array([2**64 - 1], np.uint64)),
        ([True, False], BOOL, np.array([True, False])),
        (["a", {"b64": "/w=="}], STRING, np.array([b"a", b"\xff"], dtype=object)),
        (3, UINT8, np.array(3, np.uint8)),
    ],
)
def test_values_by_dtype(value: Any, dtype: int, expected: np.ndarray) -> None:
    got = tensor(value, dtype)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("value", "dtype", "code", "message"),
    [
        ([16777217], FLOAT, "INVALID_ARGUMENT",
         "Cannot convert JSON value: 16777217 to float without loss of precision."),
        ([2.5], INT32, "INVALID_ARGUMENT",
         "JSON Value: 2.5 Type: Number is not of expected type: int32"),
        ([2**31], INT32, "INVALID_ARGUMENT",
         "JSON Value: 2147483648 Type: Number is not of expected type: int32"),
        ([1], BOOL, "INVALID_ARGUMENT", "JSON Value: 1 Type: Number is not of expected type: bool"),
        ([-1], UINT32, "INVALID_ARGUMENT",
         "JSON Value: -1 Type: Number is not of expected type: uint32"),
        ([None], FLOAT, "INVALID_ARGUMENT",
         "JSON Value: null Type: Null is not of expected type: float"),
        ([{"b64": "!!"}], STRING, "INVALID_ARGUMENT", "Unable to base64 decode"),
        ([{"b64": 1}], STRING, "INVALID_ARGUMENT",
         'JSON Value: {\n    "b64": 1\n} not formatted correctly for base64 data'),
        ([{"b64": "AA=="}], FLOAT, "INVALID_ARGUMENT", None),
        ([1.0], HALF, "UNIMPLEMENTED", "Conversion of JSON Value: 1.0 to type: half"),
        ([[1], [1, 2]], FLOAT, "INVALID_ARGUMENT",
         "Encountered list at unexpected size: 2 at level: 1 expected size: 1"),
        ([1, [2]], FLOAT, "INVALID_ARGUMENT",
         "Encountered list at unexpected level: 1 expected < 1"),
        ([[1], 2], FLOAT, "INVALID_ARGUMENT",
         "JSON Value: 2 found at incorrect level: 2 in the JSON DOM. Expected at level: 2"),
    ],
)
def test_value_errors(value: Any, dtype: int, code: str, message: str | None) -> None:
    with pytest.raises(RpcError) as info:
        tensor(value, dtype)
    assert info.value.code == getattr(grpc.StatusCode, code)
    if message is not None:
        assert info.value.message == message


def test_example_features_by_json_type() -> None:
    example = example_pb2.Example()
    _example_from_json(
        {"f": 1.5, "i": [1, 2], "b": True, "s": "x", "raw": {"b64": "/w=="}, "e": []}, example
    )
    features = example.features.feature
    assert list(features["f"].float_list.value) == [1.5]
    assert list(features["i"].int64_list.value) == [1, 2]
    assert list(features["b"].int64_list.value) == [1]
    assert list(features["s"].bytes_list.value) == [b"x"]
    assert list(features["raw"].bytes_list.value) == [b"\xff"]
    assert features["e"].WhichOneof("kind") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"f": [1, 2.5]}, "Unexpected element type in feature: f expecting type: int64"),
        ({"f": None}, "Feature: f has element with unexpected JSON type: Null"),
        ({"f": [[1]]}, "Feature: f has element with unexpected JSON type: Array"),
        ({"f": 2**64 - 1}, "Feature: f has uint64 element. Only int64 is supported."),
        ([1], "Example must be JSON object but got JSON Array"),
    ],
)
def test_example_errors(value: Any, message: str) -> None:
    with pytest.raises(RpcError, match=None) as info:
        _example_from_json(value, example_pb2.Example())
    assert info.value.message == message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{bad", "JSON Parse error: Missing a name for object member. at offset: 1"),
        (b'{"a": [1 2]}', "JSON Parse error: Missing a comma or ']' after an array element. "
                          "at offset: 9"),
        (b'{"a": 1 "b": 2}', "JSON Parse error: Missing a comma or '}' after an object member. "
                             "at offset: 8"),
        (b"{} x", "JSON Parse error: The document root must not be followed by other values. "
                  "at offset: 3"),
        (b"[1]", "JSON Value: [\n    1\n] Is not object"),
    ],
)
def test_parse_errors_use_rapidjsons_words(body: bytes, message: str) -> None:
    from tfship.server._rest import parse_json

    with pytest.raises(RpcError) as info:
        parse_json(body)
    assert info.value.message == message
