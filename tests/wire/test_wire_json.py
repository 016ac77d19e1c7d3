"""REST JSON both ways: bodies to tensors and Examples with json_tensor.cc's rules and messages,
answers and errors written byte for byte as TF Serving's rapidjson writer writes them."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from tfship._wire import (
    JsonError,
    classification_json,
    error_json,
    format_decimal,
    json_string,
    parse_json,
    predict_inputs_from_json,
    predict_json,
    regression_json,
    tensor_from_json,
)

FLOAT, DOUBLE, INT32, UINT8, STRING, INT64, BOOL, HALF, UINT32, UINT64 = (1, 2, 3, 4, 7, 9, 10, 19, 22, 23)
NAN, INF = float("nan"), float("inf")


def outcome(value: Any, dtype: int, bool_free: bool) -> np.ndarray | JsonError:
    try:
        return tensor_from_json(value, dtype, bool_free=bool_free)
    except JsonError as exc:
        return exc


def tensor(value: Any, dtype: int) -> np.ndarray:
    """The exact per-value path and the one-step numpy path must agree: same array or same error."""
    exact, fast = outcome(value, dtype, False), outcome(value, dtype, True)
    if isinstance(exact, JsonError):
        assert isinstance(fast, JsonError) and (fast.code, fast.message) == (exact.code, exact.message)
        raise exact
    assert isinstance(fast, np.ndarray)
    assert exact.dtype == fast.dtype and exact.shape == fast.shape
    np.testing.assert_array_equal(exact, fast)
    return exact


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
        (
            [16777217],
            FLOAT,
            "INVALID_ARGUMENT",
            "Cannot convert JSON value: 16777217 to float without loss of precision.",
        ),
        ([2.5], INT32, "INVALID_ARGUMENT", "JSON Value: 2.5 Type: Number is not of expected type: int32"),
        (
            [2**31],
            INT32,
            "INVALID_ARGUMENT",
            "JSON Value: 2147483648 Type: Number is not of expected type: int32",
        ),
        ([1], BOOL, "INVALID_ARGUMENT", "JSON Value: 1 Type: Number is not of expected type: bool"),
        ([-1], UINT32, "INVALID_ARGUMENT", "JSON Value: -1 Type: Number is not of expected type: uint32"),
        ([None], FLOAT, "INVALID_ARGUMENT", "JSON Value: null Type: Null is not of expected type: float"),
        ([{"b64": "!!"}], STRING, "INVALID_ARGUMENT", "Unable to base64 decode"),
        (
            [{"b64": 1}],
            STRING,
            "INVALID_ARGUMENT",
            'JSON Value: {\n    "b64": 1\n} not formatted correctly for base64 data',
        ),
        ([{"b64": "AA=="}], FLOAT, "INVALID_ARGUMENT", None),
        (
            [0, -(2**63)],
            FLOAT,
            "INVALID_ARGUMENT",  # numpy's abs() of this int64 is itself
            "Cannot convert JSON value: -9223372036854775808 to float without loss of precision.",
        ),
        (
            [1.5, 2**53],
            DOUBLE,
            "INVALID_ARGUMENT",
            "Cannot convert JSON value: 9007199254740992 to double without loss of precision.",
        ),
        ([1.0], HALF, "UNIMPLEMENTED", "Conversion of JSON Value: 1.0 to type: half"),
        (
            [[1], [1, 2]],
            FLOAT,
            "INVALID_ARGUMENT",
            "Encountered list at unexpected size: 2 at level: 1 expected size: 1",
        ),
        ([1, [2]], FLOAT, "INVALID_ARGUMENT", "Encountered list at unexpected level: 1 expected < 1"),
        (
            [[1], 2],
            FLOAT,
            "INVALID_ARGUMENT",
            "JSON Value: 2 found at incorrect level: 2 in the JSON DOM. Expected at level: 2",
        ),
    ],
)
def test_value_errors(value: Any, dtype: int, code: str, message: str | None) -> None:
    with pytest.raises(JsonError) as info:
        tensor(value, dtype)
    assert info.value.code == code
    if message is not None:
        assert info.value.message == message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{bad", "JSON Parse error: Missing a name for object member. at offset: 1"),
        (b'{"a": [1 2]}', "JSON Parse error: Missing a comma or ']' after an array element. at offset: 9"),
        (b'{"a": 1 "b": 2}', "JSON Parse error: Missing a comma or '}' after an object member. at offset: 8"),
        (b"[1]", "JSON Value: [1] Is not object"),  # 2.15 wrote "[\n    1\n]"; "{} x": test_wire_json_220.py
    ],
)
def test_parse_errors_use_rapidjsons_words(body: bytes, message: str) -> None:
    with pytest.raises(JsonError) as info:
        parse_json(body)
    assert info.value.message == message


# one numpy step and the per-value rules agree ---------------------------------------------------
@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        ([[1, 2.5, -3], [1e-3, 0, 7]], FLOAT),
        ([[16777215, -16777215]], FLOAT),
        ([[16777215.0, -0.5], [NAN, 1.5]], FLOAT),  # floats: finite and small in one reduction
        ([16777216.0, -16777216.0], FLOAT),  # at the limit: the finite filter decides
        ([[INF, -INF, 3.0]], FLOAT),
        ([float("nan"), float("inf"), -1.5], DOUBLE),
        ([[300, -1], [255, 0]], UINT8),  # int_val carries int32; C++ casts, so 300 wraps to 44
        ([[-129, 127]], 6),
        ([[], []], INT64),
        ([[[1], [2]], [[3], [4]]], INT32),
        ([2**64 - 1, 0], UINT64),
        ([[True], [False]], BOOL),
        (2.5, DOUBLE),
        ([], BOOL),
    ],
)
def test_one_step_path_matches_the_exact_rules(value: Any, dtype: int) -> None:
    tensor(value, dtype)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [([16777217, 0.5], FLOAT), ([[-1e39, 1.0]], FLOAT), ([2**53 + 1, 0.5], DOUBLE)],
)
def test_one_step_path_leaves_values_past_the_limit_to_the_exact_rules(value: Any, dtype: int) -> None:
    with pytest.raises(JsonError, match="without loss of precision"):
        tensor(value, dtype)


def test_uint8_values_wrap_as_the_cpp_cast_does() -> None:
    assert tensor([300, -1], UINT8).tolist() == [44, 255]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"inputs": [[1.0, true]]}', "JSON Value: true Type: True is not of expected type: float"),
        (
            b'{"inputs": [[1.5, 16777217]]}',
            "Cannot convert JSON value: 16777217 to float without loss of precision.",
        ),
        (
            b'{"instances": [[1.0, 2.0], [3.0]]}',
            "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: "
            "Expecting tensor size: 2 but got: 1",
        ),
    ],
)
def test_what_numpy_cannot_tell_goes_to_the_exact_rules(body: bytes, message: str) -> None:
    doc = parse_json(body)
    with pytest.raises(JsonError) as info:
        predict_inputs_from_json(doc, {"x": FLOAT}, body)
    assert info.value.message == message


def test_row_objects_are_stacked_per_input() -> None:
    body = b'{"instances": [{"a": [1.5], "b": 2}, {"a": [0], "b": -1}]}'
    arrays, form = predict_inputs_from_json(parse_json(body), {"a": FLOAT, "b": INT64}, body)
    assert form == "row"
    assert arrays["a"].dtype == np.float32 and arrays["a"].tolist() == [[1.5], [0.0]]
    assert arrays["b"].dtype == np.int64 and arrays["b"].tolist() == [2, -1]


# numbers and layout of answers ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "single", "text"),
    [
        (1.0, True, "1.0"),
        (0.1, True, "0.1"),
        (0.1, False, "0.1"),
        (1e-5, True, "1e-05"),
        (float("nan"), True, "NaN"),
        (float("-inf"), False, "-Infinity"),
        (3e20, True, "3e+20"),
        (0.1234567, True, "0.123456702"),
        (1e6, False, "1e+06"),
        (-7.0, False, "-7.0"),
    ],
)
def test_decimal_format(value: float, single: bool, text: str) -> None:
    assert format_decimal(value, single) == text


def write_decimal(value: float, single: bool) -> str:
    """WriteDecimal spelled out for one value, to check the vectorised writer against."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    cast = np.float32 if single else np.float64
    text = f"{value:g}"
    if cast(float(text)) != cast(value):
        text = f"{value:.{9 if single else 17}g}"
    return text + ".0" if "." not in text and "e" not in text else text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vectorised_decimals_match_write_decimal(dtype: Any) -> None:
    rng = np.random.default_rng(7)
    width = np.dtype(dtype).itemsize
    values = np.concatenate(
        [
            np.frombuffer(rng.bytes(4000 * width), dtype),  # every bit pattern: tiny, huge, NaN
            rng.random(2000).astype(dtype),
            (rng.integers(-(10**7), 10**7, 2000) / 100).astype(dtype),
            rng.integers(-(2**30), 2**30, 2000).astype(dtype),
            np.array([0.0, -0.0, 1e6, 999999.5, 1e-5, 1e-4, 123456.5, 16777216.0], dtype),
        ]
    )
    out = json.loads(predict_json({"y": (values, FLOAT if dtype == np.float32 else DOUBLE)}, "row"))
    assert len(out["predictions"]) == values.size
    text = predict_json({"y": (values, FLOAT if dtype == np.float32 else DOUBLE)}, "row")
    written = text[len('{\n    "predictions": [') : -len("\n    ]\n}")].split(", ")
    assert written == [write_decimal(v, dtype == np.float32) for v in values.tolist()]
    # few values take a plain loop; it must write the same
    assert written[:3000] == [format_decimal(v, dtype == np.float32) for v in values[:3000]]


def test_row_format_is_written_as_tf_servings_pretty_writer() -> None:
    y = (np.array([[2.5], [3.0]], np.float32), FLOAT)
    assert predict_json({"y": y}, "row") == '{\n    "predictions": [[2.5], [3.0]\n    ]\n}'
    two = predict_json({"y": y, "k_bytes": (np.array([b"a", b"b"], dtype=object), STRING)}, "row")
    assert two == (
        '{\n    "predictions": [{\n            "k_bytes": {\n                "b64": "YQ=="\n'
        '            },\n            "y": [2.5]\n        }, {\n            "k_bytes": {\n'
        '                "b64": "Yg=="\n            },\n            "y": [3.0]\n        }\n    ]\n}'
    )
    assert predict_json({"y": (np.zeros((0, 2), np.float32), FLOAT)}, "row") == (
        '{\n    "predictions": []\n}'
    )


def test_columnar_format_and_other_dtypes() -> None:
    out = predict_json(
        {
            "b": (np.array([True, False]), BOOL),
            "i": (np.array([[-(2**63)]], np.int64), INT64),
            "s": (np.array(b'say "hi"\n', dtype=object), STRING),
        },
        "columnar",
    )
    assert out == (
        '{\n    "outputs": {\n        "b": [\n            true,\n            false\n        ],\n'
        '        "i": [\n            [\n                -9223372036854775808\n            ]\n'
        '        ],\n        "s": "say \\"hi\\"\\n"\n    }\n}'
    )


def test_outputs_json_cannot_carry_are_refused_as_tf_serving_does() -> None:
    with pytest.raises(JsonError, match="Failed to write JSON value for tensor type: half"):
        predict_json({"h": (np.ones(1, np.float16), HALF)}, "columnar")
    empty = predict_json({"h": (np.ones((1, 0), np.float16), HALF)}, "row")
    assert empty == '{\n    "predictions": [[]\n    ]\n}'
    with pytest.raises(JsonError, match="Tensor name: s has no shape information "):
        predict_json({"s": (np.float32(1.0), FLOAT)}, "row")  # type: ignore[dict-item]  # a scalar is the point


def test_results_layouts() -> None:
    assert classification_json([[("0", 0.25), ("1", 0.75)], []]) == (
        '{\n    "results": [[["0", 0.25], ["1", 0.75]], []\n    ]\n}'
    )
    assert regression_json([1.0, 0.1]) == '{\n    "results": [1.0, 0.1]\n}'


def test_error_bodies_are_json_escaped_as_rapidjson_escapes() -> None:
    message = "input 'x': \"y\" \\ \x01\t é"
    body = error_json(message)
    assert body == ('{\n    "error": "input \'x\': \\"y\\" \\\\ \\u0001\\t é"\n}').encode()
    assert json.loads(body) == {"error": message}
    assert json_string("\x1f") == '"\\u001F"'
