"""Predict answers as ``tensor_content`` (TF Serving 2.19's ``kAsProtoContent``), written by
tfship and read back by TensorFlow's C++ decoder and by tfship's, for every dtype a model
answers with; and TensorFlow's string list in ``tensor_content`` read as TensorFlow reads it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tfship._wire import TensorDecodeError, decode_predict_response, decode_tensor, encode_predict_response

OUTPUTS: list[tuple[str, Any, int | None]] = [
    ("f32", np.arange(6, dtype=np.float32).reshape(2, 3), None),
    ("f64", np.float64(3.25), None),
    ("f16", np.array([1.5, -2.0], np.float16), None),
    ("i64", np.array([-1, 2**40], np.int64), None),
    ("i32", np.array([[-5], [7]], np.int32), None),
    ("u8", np.array([1, 255], np.uint8), None),
    ("bool", np.array([True, False, True]), None),
    ("c64", np.array([1 + 2j], np.complex64), None),
    ("empty", np.zeros((0, 3), np.float32), None),
    ("str", np.array([[b"ab", b""], [b"\xff" * 200, "é".encode()]], dtype=object), 7),
]


def test_answers_as_tensor_content_read_back_by_tensorflow_and_tfship(tf: Any) -> None:
    data = encode_predict_response(OUTPUTS, b"", as_content=True)
    ours = decode_predict_response(data)
    response = ours.raw
    for name, values, _ in OUTPUTS:
        tensor = response.outputs[name]
        assert bool(tensor.tensor_content) == (np.asarray(values).size > 0), name
        theirs = tf.io.parse_tensor(tensor.SerializeToString(), out_type=tf.dtypes.as_dtype(tensor.dtype))
        expected = np.asarray(values)
        assert theirs.numpy().tolist() == expected.tolist() == ours.outputs[name].tolist(), name
        assert ours.outputs[name].dtype == theirs.numpy().dtype and ours.outputs[name].shape == expected.shape
        assert decode_tensor(tensor).tolist() == expected.tolist()  # the message path too


def test_numeric_content_is_the_bytes_tensorflow_writes(tf: Any) -> None:
    for name, values, _ in OUTPUTS:
        if name in ("str", "bool", "c64", "empty", "f64"):  # make_tensor_proto writes typed fields
            continue
        written = decode_predict_response(
            encode_predict_response([(name, values, None)], b"", as_content=True)
        )
        assert written.raw.outputs[name].tensor_content == tf.make_tensor_proto(values).tensor_content, name


def test_typed_fields_stay_the_default() -> None:
    data = encode_predict_response(OUTPUTS[:1], b"")
    tensor = decode_predict_response(data).raw.outputs["f32"]
    assert not tensor.tensor_content and list(tensor.float_val) == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    "content",
    [b"\x02\x01ab", b"\x01\x01a", b"\x80", b"\x01\x01abc", b""],
    ids=["short", "one-length-missing", "broken-varint", "bytes-left-over", "empty-is-empty-strings"],
)
def test_a_string_list_that_does_not_fit_the_shape_is_refused(content: bytes) -> None:
    from tfship._wire import protos

    tensor = protos().tensor_pb2.TensorProto(dtype=7, tensor_content=content)
    tensor.tensor_shape.dim.add(size=2)
    if not content:  # no content: the typed field (empty) rule gives empty strings
        assert decode_tensor(tensor).tolist() == [b"", b""]
        return
    with pytest.raises(TensorDecodeError, match="not a list of 2 strings"):
        decode_tensor(tensor)
    with pytest.raises(TensorDecodeError):
        decode_tensor(tensor.SerializeToString())
