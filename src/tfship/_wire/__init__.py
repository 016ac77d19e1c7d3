"""TF Serving's formats, once: every module that speaks them imports them from here.

- ``_formats``: the ``DataType`` table (number, TensorFlow name, numpy dtype, proto field),
  signature method names and ``serving_default``, the warmup file and its record limit, the
  gRPC code -> HTTP status table of the REST API, and which directories are versions.
- ``_tensor``: ``TensorProto`` <-> numpy with TensorFlow's rules, on a fast packed path, and
  the generated protobuf classes loaded without importing TensorFlow.
- ``_json``: the REST API's JSON: request bodies to tensors and Examples with
  ``json_tensor.cc``'s rules and messages, answers and errors written as its rapidjson writer
  writes them (numbers, indents, escapes), numeric tensors without a Python loop per value.
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
    METADATA_FILE,
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
    tf_dtype_name,
    version_dirs,
    version_number,
)
from tfship._wire._json import (
    JsonError,
    classification_json,
    error_json,
    example_from_json,
    examples_from_json,
    format_decimal,
    json_string,
    parse_json,
    predict_inputs_from_json,
    predict_json,
    regression_json,
    signature_name_of,
    tensor_from_json,
)
from tfship._wire._tensor import (
    DecodedPredict,
    TensorDecodeError,
    b64_json,
    decode_predict_response,
    decode_tensor,
    encode_tensor,
    protos,
    tensor_numpy_dtype,
    text_or_b64,
)
from tfship._wire._tfrecord import (
    crc32c,
    masked_crc,
    read_record_file,
    read_records,
    write_record_file,
    write_records,
)

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
    "METADATA_FILE",
    "METHOD_KINDS",
    "PREDICT_METHOD",
    "REGRESS_METHOD",
    "WARMUP_FILE",
    "WARMUP_NAME",
    "DataType",
    "DecodedPredict",
    "JsonError",
    "TensorDecodeError",
    "b64_json",
    "classification_json",
    "crc32c",
    "datatype",
    "decode_predict_response",
    "decode_tensor",
    "dtype_enum_name",
    "dtype_name",
    "encode_tensor",
    "enum_of_dtype",
    "error_json",
    "example_from_json",
    "examples_from_json",
    "format_decimal",
    "http_status",
    "json_string",
    "masked_crc",
    "numpy_dtype",
    "parse_json",
    "predict_inputs_from_json",
    "predict_json",
    "protos",
    "read_record_file",
    "read_records",
    "regression_json",
    "signature_name_of",
    "tensor_from_json",
    "tensor_numpy_dtype",
    "text_or_b64",
    "tf_dtype_name",
    "version_dirs",
    "version_number",
    "write_record_file",
    "write_records",
]
