"""The tensor codec against TensorFlow's own converters (make_tensor_proto, make_ndarray, FromProto)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tfship._wire import (
    TensorDecodeError,
    decode_predict_response,
    decode_tensor,
    encode_tensor,
    protos,
)

NUMERIC = [
    "float32",
    "float64",
    "float16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
# Which typed field TF Serving's Tensor::AsProtoField fills for each dtype.
TYPED_FIELD = {
    "float32": "float_val",
    "float64": "double_val",
    "float16": "half_val",
    "bfloat16": "half_val",
    "int8": "int_val",
    "int16": "int_val",
    "int32": "int_val",
    "uint8": "int_val",
    "uint16": "int_val",
    "uint32": "uint32_val",
    "uint64": "uint64_val",
    "int64": "int64_val",
    "bool": "bool_val",
    "complex64": "scomplex_val",
    "complex128": "dcomplex_val",
}


def _same(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    if ours.dtype == object:
        assert ours.tolist() == theirs.tolist()
    else:  # bit-exact: NaN payloads and signed zeros included
        assert ours.tobytes() == theirs.tobytes()


def _typed_values(flat: np.ndarray, dtype: str) -> list[Any]:
    """Values as TF Serving writes them into the typed field for that dtype."""
    if dtype in ("float16", "bfloat16"):
        return flat.view(np.uint16).astype(np.int32).tolist()
    if dtype.startswith("complex"):
        part = np.float32 if dtype == "complex64" else np.float64
        return flat.view(part).tolist()
    return flat.tolist()


def _typed_proto(array: np.ndarray, dtype: str, keep: int) -> Any:
    """A TensorProto holding only the first `keep` values in its typed field."""
    tf_dtype = {"float16": 19, "bfloat16": 14}.get(dtype)
    proto = encode_tensor(np.zeros(array.shape, dtype=array.dtype))
    proto.ClearField("tensor_content")
    if tf_dtype:
        proto.dtype = tf_dtype
    values = _typed_values(array.ravel()[:keep], dtype)
    getattr(proto, TYPED_FIELD[dtype]).extend(values)
    return proto


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(NUMERIC), shape=SHAPES)
def test_numpy_round_trip_matches_tensorflow(tf: Any, data: Any, dtype: str, shape: tuple) -> None:
    array = data.draw(hnp.arrays(np.dtype(dtype), shape))
    ours = encode_tensor(array)
    theirs = tf.make_tensor_proto(array)
    assert ours.dtype == theirs.dtype
    _same(tf.make_ndarray(ours), tf.make_ndarray(theirs))
    _same(decode_tensor(theirs), tf.make_ndarray(theirs))
    _same(decode_tensor(ours), array)
    assert ours.tensor_content or array.size == 0  # numeric requests use tensor_content


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([*NUMERIC, "bfloat16"]), shape=SHAPES)
def test_typed_fields_follow_fromproto(tf: Any, data: Any, dtype: str, shape: tuple) -> None:
    # FromProto (the C++ decoder behind tf.io.parse_tensor) repeats the last value when a
    # typed field is shorter than the shape, and means zeros when it is empty.
    np_dtype = np.dtype(tf.dtypes.as_dtype(dtype).as_numpy_dtype)
    array = data.draw(hnp.arrays(np_dtype if dtype != "bfloat16" else np.uint16, shape))
    if dtype == "bfloat16":
        array = array.view(np_dtype)
    keep = data.draw(st.integers(0, max(array.size, 0)))
    proto = _typed_proto(array, dtype, keep)
    serialized = proto.SerializeToString()
    expected = tf.io.parse_tensor(serialized, tf.dtypes.as_dtype(dtype)).numpy()
    _same(decode_tensor(proto), expected)
    _same(decode_tensor(serialized), expected)


def test_long_typed_float_field_uses_the_wire_path(tf: Any) -> None:
    array = np.arange(5000, dtype=np.float32).reshape(50, 100) / 7
    proto = _typed_proto(array, "float32", array.size)
    _same(decode_tensor(proto), tf.make_ndarray(proto))


python_values = st.one_of(
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=6),
    st.lists(st.lists(st.floats(width=32), min_size=3, max_size=3), min_size=1, max_size=4),
    st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=6),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=6),
    st.lists(st.booleans(), min_size=1, max_size=6),
    st.lists(st.text(max_size=5), min_size=1, max_size=6),
    st.lists(st.binary(max_size=5), min_size=1, max_size=6),
    st.lists(st.lists(st.text(max_size=3), min_size=2, max_size=2), min_size=1, max_size=3),
    st.floats(width=32),
    st.integers(-(2**31), 2**31 - 1),
    st.text(max_size=4),
)


@settings(max_examples=80, deadline=None)
@given(value=python_values)
def test_python_values_match_make_tensor_proto(tf: Any, value: Any) -> None:
    ours = encode_tensor(value)
    theirs = tf.make_tensor_proto(value)
    assert ours.dtype == theirs.dtype
    _same(tf.make_ndarray(ours), tf.make_ndarray(theirs))


@pytest.mark.parametrize("dtype", ["float32", "int64", "string", "float16"])
def test_explicit_dtype_casts(tf: Any, dtype: str) -> None:
    value = [[1, 2], [3, 4]] if dtype != "string" else [["a", "b"], ["c", "d"]]
    ours = encode_tensor(value, dtype=dtype)
    theirs = tf.make_tensor_proto(value, dtype=tf.dtypes.as_dtype(dtype))
    _same(tf.make_ndarray(ours), tf.make_ndarray(theirs))


def test_encode_never_mutates_its_input() -> None:
    array = np.arange(6, dtype=np.float64).reshape(2, 3)
    before = array.copy()
    encode_tensor(array, dtype="float32")
    assert np.array_equal(array, before) and array.dtype == np.float64


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ([[1.0, 2.0], [3.0]], ValueError, "cannot build a tensor"),
        ([1, "a"], TypeError, "mix strings and numbers"),
        (["a", 1], TypeError, "expected str or bytes"),
        (["a", np.float64(1.5)], TypeError, r"^string tensor holds a float64 \(1\.5\); expected str"),
        ([1.0], TypeError, "cannot be sent"),
    ],
)
def test_bad_values_raise_misuse_errors(value: Any, error: type, match: str) -> None:
    dtype = "datetime64[s]" if match == "cannot be sent" else None
    with pytest.raises(error, match=match):
        encode_tensor(value, dtype=dtype)


def test_content_of_wrong_size_is_malformed() -> None:
    proto = encode_tensor(np.zeros((2, 2), np.float32))
    proto.tensor_content = b"\0" * 12
    with pytest.raises(TensorDecodeError, match="holds 12 bytes; shape \\[2, 2\\]"):
        decode_tensor(proto)


def test_unknown_dtype_is_malformed() -> None:
    proto = protos().tensor_pb2.TensorProto(dtype=20)
    with pytest.raises(TensorDecodeError, match="dtype enum 20 is not supported"):
        decode_tensor(proto)


def _response(outputs: dict[str, Any]) -> Any:
    pb = protos()
    resp = pb.predict_pb2.PredictResponse()
    resp.model_spec.name = "m"
    resp.model_spec.version.value = 7
    resp.model_spec.signature_name = "serving_default"
    for key, proto in outputs.items():  # TensorFlow's TensorProto or tfship's: by their bytes
        resp.outputs[key].ParseFromString(proto.SerializeToString())
    return resp


def test_predict_response_decodes_every_field_kind(tf: Any) -> None:
    floats = np.random.default_rng(0).random((30, 40)).astype(np.float32)
    outputs = {
        "scores": _typed_proto(floats, "float32", floats.size),
        "padded": _typed_proto(floats[:2], "float32", 3),
        "doubles": _typed_proto(floats.astype(np.float64), "float64", floats.size),
        "cplx": _typed_proto(floats[:1].astype(np.complex64) * 1j, "complex64", 40),
        "ids": _typed_proto(np.arange(10, dtype=np.int64), "int64", 10),
        "half": _typed_proto(floats[:1].astype(np.float16), "float16", 40),
        "content": tf.make_tensor_proto(floats),
        "names": tf.make_tensor_proto([b"a", b"\xff", b""]),
        "empty": tf.make_tensor_proto(np.zeros((0, 3), np.float32)),
    }
    resp = _response(outputs)
    decoded = decode_predict_response(resp.SerializeToString())
    assert set(decoded.outputs) == set(outputs)
    for key, proto in outputs.items():
        expected = tf.io.parse_tensor(proto.SerializeToString(), proto.dtype).numpy()
        _same(decoded.outputs[key], expected)
    assert decoded.model_spec.version.value == 7
    assert decoded.raw == resp


def test_predict_response_joins_split_packed_chunks() -> None:
    # Protobuf allows one packed field to arrive in several chunks; they concatenate.
    pb = protos()
    first, second = pb.tensor_pb2.TensorProto(dtype=1), pb.tensor_pb2.TensorProto()
    first.tensor_shape.dim.add(size=4)
    first.float_val.extend([1.0, 2.0])
    second.float_val.extend([3.0, 4.0])
    tensor_bytes = first.SerializeToString() + second.SerializeToString()
    entry = b"\x0a\x01y" + b"\x12" + bytes([len(tensor_bytes)]) + tensor_bytes
    data = b"\x0a" + bytes([len(entry)]) + entry
    assert decode_predict_response(data).outputs["y"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_truncated_response_is_malformed() -> None:
    data = _response({"y": encode_tensor([1.0, 2.0])}).SerializeToString()
    with pytest.raises(TensorDecodeError):
        decode_predict_response(data[:-3])


def test_a_tensorflow_tensor_proto_is_taken_by_its_bytes(tf: Any) -> None:
    # tf.make_tensor_proto gives TensorFlow's class; a request of tfship's classes takes it
    # only as tfship's class of the same bytes.
    theirs = tf.make_tensor_proto(np.arange(6, dtype=np.float32).reshape(2, 3))
    encoded = encode_tensor(theirs)
    assert type(encoded) is protos().tensor_pb2.TensorProto
    assert encoded.SerializeToString() == theirs.SerializeToString()
    request = protos().predict_pb2.PredictRequest()
    request.inputs["x"].CopyFrom(encoded)
    np.testing.assert_array_equal(decode_tensor(request.inputs["x"]), tf.make_ndarray(theirs))
    mine = encode_tensor([1.0])
    assert encode_tensor(mine) is mine
