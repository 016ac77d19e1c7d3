"""Outputs straight to the wire: byte for byte what AsProtoField and protobuf's serializer write.

The reference is TensorFlow's own ``TensorProto`` class filled field by field the way
``Tensor::AsProtoField`` fills it (dtype, a present ``tensor_shape``, the typed field) and
serialized by protobuf. Decoding follows ``Tensor::FromProto``, checked against
``tf.io.parse_tensor`` (which runs it).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tfship._wire import (
    DATATYPES,
    TensorDecodeError,
    decode_predict_response,
    decode_tensor,
    encode_predict_response,
    encode_tensor_field,
    protos,
)

# DataType number -> numpy dtype, every type AsProtoField writes a typed field for.
DTYPES: dict[int, Any] = {
    1: np.float32,
    2: np.float64,
    3: np.int32,
    4: np.uint8,
    5: np.int16,
    6: np.int8,
    7: object,
    8: np.complex64,
    9: np.int64,
    10: np.bool_,
    14: ml_dtypes.bfloat16,
    17: np.uint16,
    18: np.complex128,
    19: np.float16,
    22: np.uint32,
    23: np.uint64,
}
SHAPES = [(), (0,), (3, 0), (1,), (5,), (2, 3), (130,)]


def as_proto_field(array: np.ndarray, enum: int) -> bytes:
    """The reference: a TensorProto filled as Tensor::AsProtoField does, then serialized."""
    proto = protos().tensor_pb2.TensorProto(dtype=enum)
    proto.tensor_shape.SetInParent()  # mutable_tensor_shape(): present even for a scalar
    for size in array.shape:
        proto.tensor_shape.dim.add(size=size)
    name = DATATYPES[enum].field
    flat = array.reshape(-1)
    values = getattr(proto, name)
    if name in ("scomplex_val", "dcomplex_val"):
        values.extend(np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist())
    elif name == "half_val":
        values.extend(flat.view(np.uint16).astype(np.int64).tolist())
    else:
        values.extend(flat.tolist())
    data: bytes = proto.SerializeToString()
    return data


def values_of(enum: int, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    dtype = np.dtype(DTYPES[enum])
    if enum == 7:
        return np.array([bytes(rng.integers(0, 256, i % 4)) for i in range(count)], dtype=object).reshape(
            shape
        )
    if enum == 10:
        return rng.integers(0, 2, count).astype(bool).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)  # the extremes need the longest varints
        edges = np.array([info.min, info.max, 0, 1], dtype=dtype)
        body = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
        body[: min(4, count)] = edges[: min(4, count)]
        return body.reshape(shape)
    if dtype.kind == "c":
        return (rng.normal(size=count) + 1j * rng.normal(size=count)).astype(dtype).reshape(shape)
    out = (rng.normal(size=count) * 1e3).astype(dtype)
    if count >= 3:
        out[:3] = np.array([np.inf, -0.0, np.nan]).astype(dtype)
    return out.reshape(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("enum", sorted(DTYPES), ids=lambda e: DATATYPES[e].name)
def test_encoding_is_byte_identical_to_as_proto_field(enum: int, shape: tuple[int, ...]) -> None:
    array = values_of(enum, shape, seed=enum)
    data = encode_tensor_field(array, enum)
    assert data == as_proto_field(array, enum)
    back = decode_tensor(data)
    assert back.shape == array.shape and back.dtype == array.dtype
    if enum == 7:
        assert back.tolist() == array.tolist()
    else:  # bit for bit, NaN and -0.0 included
        assert back.tobytes() == np.ascontiguousarray(array).tobytes()


def test_scalar_outputs_carry_an_empty_shape(tf: Any) -> None:
    proto = protos().tensor_pb2.TensorProto.FromString(encode_tensor_field(np.float32(3.5)))
    assert proto.HasField("tensor_shape") and len(proto.tensor_shape.dim) == 0
    assert list(proto.float_val) == [3.5] and proto.tensor_content == b""
    assert tf.make_ndarray(proto) == np.float32(3.5)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([np.float32, np.int32, np.int64, np.uint8, np.bool_, np.float16]).flatmap(
        lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0))
    )
)
def test_tensorflow_reads_what_we_write(tf: Any, array: np.ndarray) -> None:
    data = encode_tensor_field(array)
    parsed = tf.io.parse_tensor(data, tf.as_dtype(array.dtype)).numpy()
    np.testing.assert_array_equal(parsed, array)


def test_predict_response_of_encoded_outputs() -> None:
    spec = protos().model_pb2.ModelSpec(name="m", signature_name="serving_default")
    spec.version.value = 3
    outputs = [
        ("y", np.arange(6, dtype=np.int64).reshape(2, 3), None),
        ("s", np.array([b"a", b"bc"], dtype=object), 7),
        ("f", np.linspace(0, 1, 300, dtype=np.float32), None),
    ]
    data = encode_predict_response(outputs, spec.SerializeToString())
    message = protos().predict_pb2.PredictResponse.FromString(data)
    assert message.model_spec == spec
    assert list(message.outputs["s"].string_val) == [b"a", b"bc"]
    decoded = decode_predict_response(data)
    assert decoded.outputs["y"].tolist() == [[0, 1, 2], [3, 4, 5]]
    for alias, values, enum in outputs:  # each output as encode_tensor_field writes it
        assert message.outputs[alias].SerializeToString() == encode_tensor_field(values, enum)


# FromProto, checked against tf.io.parse_tensor (TensorFlow's C++ Tensor::FromProto) -----------
def _proto(**fields: Any) -> Any:
    dims = fields.pop("dims", (2,))
    proto = protos().tensor_pb2.TensorProto(**fields)
    for size in dims:
        proto.tensor_shape.dim.add(size=size)
    return proto


@pytest.mark.parametrize(
    "proto",
    [
        _proto(dtype=1, float_val=[1.0, 2.0, 3.0], dims=(1,)),  # extra values are cut
        _proto(dtype=9, int64_val=[4, 7], dims=(4,)),  # short: the last one repeats
        _proto(dtype=3, dims=(3,)),  # none: zeros
        _proto(dtype=8, scomplex_val=[1.0, 2.0, 3.0]),  # a dangling real is ignored
        _proto(dtype=1, tensor_content=b"abc", dims=(0,)),  # no elements: content unread
        _proto(dtype=3, int_val=[-1] * 70 + [2**31 - 1], dims=(71,)),  # the packed path
    ],
    ids=["cut", "repeat", "zeros", "complex", "empty", "long"],
)
def test_decoding_follows_fromproto(tf: Any, proto: Any) -> None:
    dtype = tf.dtypes.as_dtype(proto.dtype)
    expected = tf.io.parse_tensor(proto.SerializeToString(), dtype).numpy()
    for given_form in (proto, proto.SerializeToString()):
        np.testing.assert_array_equal(decode_tensor(given_form), expected)


def test_unknown_rank_flag_is_ignored_as_fromproto_ignores_it() -> None:
    proto = _proto(dtype=1, float_val=[1.5])
    proto.tensor_shape.unknown_rank = True
    assert decode_tensor(proto).tolist() == [1.5, 1.5]


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: setattr(p, "tensor_content", b"\x00" * 3),  # wrong byte count
        lambda p: setattr(p, "dtype", 20),  # DT_RESOURCE
        lambda p: setattr(p, "dtype", 0),  # DT_INVALID
        lambda p: p.tensor_shape.dim.add(size=-1),
    ],
    ids=["content-size", "resource", "invalid", "negative-dim"],
)
def test_what_fromproto_refuses_is_refused(edit: Any) -> None:
    proto = _proto(dtype=1)
    edit(proto)
    for given_form in (proto, proto.SerializeToString()):
        with pytest.raises(TensorDecodeError):
            decode_tensor(given_form)


def test_padding_cannot_allocate_more_than_a_request_could_carry() -> None:
    proto = _proto(dtype=9, dims=(2**29,))  # 4 GiB of zeros from a few bytes
    with pytest.raises(TensorDecodeError, match="needs more than 2 GiB"):
        decode_tensor(proto)
