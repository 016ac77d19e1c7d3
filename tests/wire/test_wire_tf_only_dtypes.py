"""TensorFlow's float8, float4, int4 and int2 types: named as TensorFlow names them, refused by
the tensor codec in one line naming the type (never decoded or encoded to a wrong value), and
told apart from the Open Inference Protocol's datatypes, which have none of them.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from tfship._wire import (
    TensorDecodeError,
    decode_tensor,
    dtype_enum_name,
    dtype_name,
    encode_tensor,
    enum_of_array,
    protos,
    tf_dtype_name,
    v2_datatype,
    v2_datatype_text,
)

# TensorFlow 2.21's types.proto: the numbers and names of the types tfship's codec does not carry.
TF_ONLY = {
    24: "DT_FLOAT8_E5M2",
    25: "DT_FLOAT8_E4M3FN",
    26: "DT_FLOAT8_E4M3FNUZ",
    27: "DT_FLOAT8_E4M3B11FNUZ",
    28: "DT_FLOAT8_E5M2FNUZ",
    29: "DT_INT4",
    30: "DT_UINT4",
    31: "DT_INT2",
    32: "DT_UINT2",
    33: "DT_FLOAT4_E2M1FN",
}


def _tensor(enum: int, **fields: Any) -> Any:
    proto = protos().tensor_pb2.TensorProto(dtype=enum, **fields)
    proto.tensor_shape.dim.add(size=2)
    return proto


@pytest.mark.parametrize("enum", sorted(TF_ONLY))
def test_names_are_tensorflows(enum: int) -> None:
    name = TF_ONLY[enum]
    types = protos().types_pb2.DataType
    assert types.Name(enum) == dtype_enum_name(enum) == name
    assert types.Name(enum + 100) == dtype_enum_name(enum + 100) == f"{name}_REF"
    assert tf_dtype_name(enum) == dtype_name(enum) == name[3:].lower()


def test_every_datatype_of_the_installed_tensorflow_is_named_alike() -> None:
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2

    values = types_pb2.DataType.DESCRIPTOR.values
    assert len(values) > 40
    for value in values:
        assert dtype_enum_name(value.number) == value.name
        assert protos().types_pb2.DataType.Name(value.number) == value.name
        if value.number in TF_ONLY:  # Python names the older types numpy's way (float32)
            assert tf_dtype_name(value.number) == tf.dtypes.as_dtype(value.number).name


@pytest.mark.parametrize("enum", sorted(TF_ONLY))
@pytest.mark.parametrize(
    "fields",
    [
        {"tensor_content": b"\x01\x02"},  # one byte per element, as TensorFlow writes them
        {"float8_val": b"\x38\xb8"},
        {"int_val": [1, -2]},
        {},
    ],
    ids=["content", "float8_val", "int_val", "empty"],
)
@pytest.mark.parametrize("serialized", [False, True], ids=["message", "bytes"])
def test_decoding_refuses_in_one_line_naming_the_type(
    enum: int, fields: dict[str, Any], serialized: bool
) -> None:
    proto = _tensor(enum, **fields)
    with pytest.raises(TensorDecodeError) as caught:
        decode_tensor(proto.SerializeToString() if serialized else proto)
    message = str(caught.value)
    assert "\n" not in message
    assert f"dtype enum {enum} is not supported ({TF_ONLY[enum][3:].lower()}, " in message
    assert "which tfship does not encode or decode" in message


@pytest.mark.parametrize("enum", sorted(TF_ONLY))
def test_encoding_refuses_in_one_line_naming_the_type(enum: int) -> None:
    name = TF_ONLY[enum][3:].lower()
    want = f"dtype {name} ({TF_ONLY[enum]}) cannot be sent"
    with pytest.raises(TypeError, match=rf"^{re.escape(want)}"):
        encode_tensor([1.0, 0.5], dtype=name)
    import ml_dtypes  # TensorFlow's numpy types, in both lanes

    if not hasattr(ml_dtypes, name):
        # TF 2.15's ml_dtypes predates int2, uint2 and float4: no array of them can be made there
        assert enum in (31, 32, 33) and TF_ONLY[enum] in ("DT_INT2", "DT_UINT2", "DT_FLOAT4_E2M1FN")
        return
    array = np.zeros(2, dtype=getattr(ml_dtypes, name))
    for call in (lambda: encode_tensor(array), lambda: enum_of_array(array)):
        with pytest.raises(TypeError, match=rf"^{re.escape(want)}"):
            call()
    with pytest.raises(TypeError, match=rf"^{re.escape(want)}"):
        encode_tensor([1, 0], dtype=np.dtype(getattr(ml_dtypes, name)))


def test_a_tensorflow_dtype_object_is_refused_by_name() -> None:
    import tensorflow as tf

    for enum, name in TF_ONLY.items():
        try:
            dtype = tf.dtypes.as_dtype(enum)
        except TypeError:  # an older TensorFlow without this type
            continue
        with pytest.raises(TypeError, match=rf"^dtype {name[3:].lower()} \({name}\) cannot be sent"):
            encode_tensor(np.zeros(2, np.float32), dtype=dtype)


@pytest.mark.parametrize("enum", sorted(TF_ONLY))
def test_the_open_inference_protocol_has_no_datatype_for_them(enum: int) -> None:
    assert v2_datatype(enum) is None
    assert v2_datatype_text(enum) == f"{TF_ONLY[enum]} (no Open Inference Protocol datatype)"
