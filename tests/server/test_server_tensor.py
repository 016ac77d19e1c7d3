"""The server's TensorProto conversion agrees with TensorFlow's own (make_ndarray, FromProto)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tensorflow.core.framework import tensor_pb2

from tfship._tf import tf
from tfship._wire import TensorDecodeError
from tfship.server._tensor import from_ndarray, to_ndarray

DTYPES = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
          np.uint32, np.uint64, np.bool_, np.float16, np.complex64, np.complex128]
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda d: hnp.arrays(d, shapes)))
def test_typed_fields_round_trip_through_tensorflow(array: np.ndarray) -> None:
    proto = from_ndarray(array, tensor_pb2.TensorProto)
    assert proto.tensor_content == b""
    np.testing.assert_array_equal(tf().make_ndarray(proto), array)
    np.testing.assert_array_equal(to_ndarray(proto), array)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda d: hnp.arrays(d, shapes)))
def test_decodes_what_make_tensor_proto_builds(array: np.ndarray) -> None:
    proto = tf().make_tensor_proto(array)
    decoded = to_ndarray(proto)
    assert decoded.dtype == array.dtype
    np.testing.assert_array_equal(decoded, tf().make_ndarray(proto))


def test_strings_round_trip() -> None:
    array = np.array([[b"a", b""], [b"\xff\x00", "é".encode()]], dtype=object)
    proto = from_ndarray(array, tensor_pb2.TensorProto)
    assert list(proto.string_val) == [b"a", b"", b"\xff\x00", "é".encode()]
    np.testing.assert_array_equal(to_ndarray(tf().make_tensor_proto(array)), array)


def test_short_fields_repeat_the_last_value_and_empty_means_zeros() -> None:
    proto = tensor_pb2.TensorProto(dtype=9, int64_val=[4, 7])
    proto.tensor_shape.dim.add().size = 4
    assert to_ndarray(proto).tolist() == [4, 7, 7, 7]
    del proto.int64_val[:]
    assert to_ndarray(proto).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p.float_val.extend([1.0] * 5),  # more values than the shape
        lambda p: setattr(p, "tensor_content", b"\x00" * 3),  # wrong byte count
        lambda p: setattr(p, "dtype", 20),  # DT_RESOURCE
        lambda p: p.tensor_shape.dim.add(size=-1),
        lambda p: setattr(p.tensor_shape, "unknown_rank", True),
    ],
)
def test_bad_protos_are_refused(edit: object) -> None:
    proto = tensor_pb2.TensorProto(dtype=1)
    proto.tensor_shape.dim.add().size = 2
    edit(proto)  # type: ignore[operator]
    with pytest.raises(TensorDecodeError):
        to_ndarray(proto)


def test_padding_cannot_allocate_more_than_a_request_could_carry() -> None:
    proto = tensor_pb2.TensorProto(dtype=9)  # int64, no values: zeros of the shape
    proto.tensor_shape.dim.add().size = 2**29  # 4 GiB of zeros from a few bytes
    with pytest.raises(TensorDecodeError, match="needs more than 2 GiB"):
        to_ndarray(proto)
