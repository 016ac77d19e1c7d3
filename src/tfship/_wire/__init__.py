"""TF Serving's formats, once: every module that speaks them imports them from here.

- ``_formats``: the ``DataType`` table (number, TensorFlow name, numpy dtype, proto field),
  signature method names and ``serving_default``, the warmup file and its record limit, the
  gRPC code -> HTTP status table of the REST API, and which directories are versions.
- ``_tensor``: ``TensorProto`` <-> numpy with TensorFlow's rules, on a fast packed path, and
  the generated protobuf classes loaded without importing TensorFlow.
- ``_tfrecord``: TFRecord files (warmup requests) read and written without TensorFlow.

Importing this package imports numpy and protobuf, never TensorFlow.
"""

from __future__ import annotations

from tfship._wire._formats import (
    ASSETS_EXTRA,
    CLASSIFY_METHOD,
    CODE_OF_HTTP,
    DATATYPES,
    DEFAULT_SIGNATURE,
    DT_FLOAT,
    DT_STRING,
    ENUM_OF_NUMPY,
    HTTP_OF_CODE,
    MAX_WARMUP_RECORDS,
    METHOD_KINDS,
    PREDICT_METHOD,
    REGRESS_METHOD,
    WARMUP_FILE,
    WARMUP_NAME,
    DataType,
    datatype,
    dtype_enum_name,
    dtype_name,
    enum_of_dtype,
    http_status,
    numpy_dtype,
    rest_error_body,
    tf_dtype_name,
    version_dirs,
    version_number,
)
from tfship._wire._tensor import (
    DecodedPredict,
    TensorDecodeError,
    b64_json,
    decode_predict_response,
    decode_tensor,
    encode_predict_response,
    encode_tensor,
    encode_tensor_field,
    enum_of_array,
    protos,
    tensor_numpy_dtype,
    text_or_b64,
)
from tfship._wire._tfrecord import crc32c, masked_crc, read_records, write_records

__all__ = [
    "ASSETS_EXTRA",
    "CLASSIFY_METHOD",
    "CODE_OF_HTTP",
    "DATATYPES",
    "DEFAULT_SIGNATURE",
    "DT_FLOAT",
    "DT_STRING",
    "ENUM_OF_NUMPY",
    "HTTP_OF_CODE",
    "MAX_WARMUP_RECORDS",
    "METHOD_KINDS",
    "PREDICT_METHOD",
    "REGRESS_METHOD",
    "WARMUP_FILE",
    "WARMUP_NAME",
    "DataType",
    "DecodedPredict",
    "TensorDecodeError",
    "b64_json",
    "crc32c",
    "datatype",
    "decode_predict_response",
    "decode_tensor",
    "dtype_enum_name",
    "dtype_name",
    "encode_predict_response",
    "encode_tensor",
    "encode_tensor_field",
    "enum_of_array",
    "enum_of_dtype",
    "http_status",
    "masked_crc",
    "numpy_dtype",
    "protos",
    "read_records",
    "rest_error_body",
    "tensor_numpy_dtype",
    "text_or_b64",
    "tf_dtype_name",
    "version_dirs",
    "version_number",
    "write_records",
]
