"""The one table of TF Serving's formats agrees with TensorFlow's own protos and dtypes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tensorflow.core.framework import tensor_pb2, types_pb2

from tfship._tf import tf
from tfship._wire import (
    CODE_OF_HTTP,
    DATATYPES,
    HTTP_OF_CODE,
    dtype_enum_name,
    dtype_name,
    enum_of_dtype,
    numpy_dtype,
    version_dirs,
    version_numbers,
)


@pytest.mark.parametrize("enum", sorted(DATATYPES))
def test_datatype_table_matches_tensorflow(enum: int) -> None:
    entry = DATATYPES[enum]
    assert types_pb2.DataType.Name(enum) == entry.enum_name == dtype_enum_name(enum)
    assert hasattr(tensor_pb2.TensorProto(), entry.field)
    tf_dtype = tf().dtypes.as_dtype(enum)
    if not entry.name.startswith(("qint", "quint")):
        assert np.dtype(tf_dtype.as_numpy_dtype) == numpy_dtype(enum)
        assert enum_of_dtype(numpy_dtype(enum)) == enum
        assert dtype_name(enum) == ("string" if enum == 7 else tf_dtype.name)


def test_http_status_table_reads_back() -> None:
    for status, code in CODE_OF_HTTP.items():
        assert HTTP_OF_CODE[code] == status
    assert CODE_OF_HTTP[400] == "INVALID_ARGUMENT"


def test_version_dirs_follow_tf_serving(tmp_path: Path) -> None:
    for name in ("1", "007", "20", ".tfship-staging-3", "v2", "1.bak", "9" * 20):
        (tmp_path / name).mkdir()
    (tmp_path / "5").write_text("a file is not a version")
    assert [(n, p.name) for n, p in version_dirs(tmp_path)] == [(1, "1"), (7, "007"), (20, "20")]
    assert version_dirs(tmp_path / "missing") == []
    (tmp_path / "7").mkdir()  # one version under two names
    assert version_numbers(tmp_path) == [1, 7, 20]
    assert version_numbers(tmp_path / "missing") == version_numbers(tmp_path / "5") == []
