"""TF Serving 2.20.0's ``util/json_tensor_test.cc``: the cases 2.16 to 2.20 added or changed.

TF Serving 2.18 reads request bodies with rapidjson's iterative parser and stops at the end of
the root value, and quotes values in errors through a writer cut at 256 bytes, arrays on one
line (``JsonValueToDebugString``). tfship follows 2.20 where the two releases differ; the
cases of 2.15.1's suite that 2.20 changed are marked there, and listed in
docs/serving/tf-serving-2.20.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tfship._wire import (
    JsonError,
    error_json_text,
    parse_json,
    predict_inputs_from_json,
    signature_name_of,
)
from tfship._wire._json_doc import JsonSyntaxError, rapidjson_double, read_deep

INT32 = 3
DEEP = 500_000


def deep_body(prefix: bytes, depth: int = DEEP) -> bytes:
    return prefix + b"[" * depth + b"]" * depth + b"}"


# ------------------------------------------------------------ the two cases 2.18 added


def test_deeply_nested_well_formed() -> None:
    """DeeplyNestedWellFormed: 500,000 arrays under a key the request does not use."""
    body = deep_body(b'{"instances":[1], "nested":')
    doc = parse_json(body)
    inputs, _ = predict_inputs_from_json(doc, {"default": INT32}, body)
    assert list(inputs) == ["default"] and inputs["default"].tolist() == [1]


def test_deeply_nested_malformed() -> None:
    """DeeplyNestedMalformed: the same depth as ``signature_name`` is an INVALID_ARGUMENT."""
    body = deep_body(b'{"signature_name":')
    with pytest.raises(JsonError) as info:
        signature_name_of(parse_json(body))
    assert info.value.code == "INVALID_ARGUMENT"
    assert "key must be a string value" in info.value.message
    quoted = info.value.message.split(" not formatted correctly")[0].removeprefix("JSON Value: ")
    assert quoted == '{\n    "signature_name": ' + "[" * (256 - 24)  # stops at 256 bytes


def test_deep_bodies_stay_bounded_and_never_recurse_in_python() -> None:
    """In a child whose Python recursion limit is 100: the 500,000-deep body parses, an error
    quotes it, and the process's peak memory and the time stay small."""
    code = textwrap.dedent(
        f"""
        import resource, sys, time
        from tfship._wire import JsonError, parse_json, signature_name_of
        sys.setrecursionlimit(100)
        start = time.perf_counter()
        body = b'{{"instances":[1], "nested":' + b"[" * {DEEP} + b"]" * {DEEP} + b"}}"
        assert parse_json(body)["instances"] == [1]
        try:
            deep = body[len(b'{{"instances":[1], "nested":') :]
            signature_name_of(parse_json(b'{{"signature_name":' + deep))
        except JsonError as exc:
            assert len(exc.message) < 400
        else:
            raise SystemExit("a deep signature_name was not refused")
        try:  # this process's own peak: ru_maxrss may keep the forking parent's
            with open("/proc/self/status") as status:
                peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
        except OSError:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(time.perf_counter() - start, peak // 1024)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seconds, peak_mib = out.stdout.split()
    assert float(seconds) < 60 and int(peak_mib) < 300, out.stdout


def test_a_deep_value_under_a_key_the_request_uses_is_one_clear_error() -> None:
    """Neither suite has this case (2.20's tensor filling recurses in C++): tfship refuses a
    tensor of more than TensorFlow's 254 dimensions before descending into it."""
    body = b'{"inputs": ' + b"[" * 100_000 + b"1" + b"]" * 100_000 + b"}"
    with pytest.raises(JsonError) as info:
        predict_inputs_from_json(parse_json(body), {"x": INT32}, body)
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.message.endswith("is nested 100000 deep; a tensor has at most 254 dimensions")
    assert len(info.value.message) < 400
    at_limit = json.dumps({"inputs": [[[1]]]}).encode()
    assert predict_inputs_from_json(parse_json(at_limit), {"x": INT32}, at_limit)[0]["x"].shape == (1, 1, 1)


def test_a_document_ends_at_its_root_value() -> None:
    """kParseStopWhenDoneFlag (2.18): what follows the root is not read. 2.15.1 refused
    ``{} x`` with "The document root must not be followed by other values."."""
    assert parse_json(b'{"instances": [1]} trailing words') == {"instances": [1]}
    assert parse_json(b'  {"instances": [NaN]}}}') == {
        "instances": [pytest.approx(float("nan"), nan_ok=True)]
    }
    assert parse_json(b'{"a": 1} \xff\xfe') == {"a": 1}
    with pytest.raises(JsonError, match="Invalid encoding in string. at offset: 6"):
        parse_json(b'{"a":"\xff"}')


# ------------------------------------------------------------ values quoted in errors


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ([1, 2], "[1, 2]"),
        ({"b64": 1}, '{\n    "b64": 1\n}'),
        ({"a": [1, {"b": None}]}, '{\n    "a": [1, {\n            "b": null\n        }]\n}'),
        ([{"a": 1}], '[{\n        "a": 1\n    }]'),
        ({}, "{}"),
        ([], "[]"),
        ("x\x1fé", '"x\\u001Fé"'),
        (2.5, "2.5"),
        (1e-5, "0.00001"),
        (1e21, "1e21"),
        (1e20, "100000000000000000000.0"),
        (2**63, "9223372036854775808"),
        ([1, float("nan"), 2], "[1, "),  # rapidjson's writer refuses NaN and stops there
    ],
)
def test_values_are_quoted_as_rapidjsons_single_line_array_writer(value: Any, text: str) -> None:
    assert error_json_text(value) == text


def test_quoted_values_are_cut_once_256_bytes_are_written() -> None:
    text = error_json_text(list(range(1000)))
    assert text.startswith("[0, 1, 2, ") and not text.endswith("]")
    assert 256 <= len(text.encode()) < 256 + len(", 999")
    long_string = "y" * 10_000  # one token: written whole, as the limit is checked between tokens
    assert error_json_text([long_string, 1]) == "[" + json.dumps(long_string)
    wide = {f"k{i}": i for i in range(100)}
    assert len(error_json_text(wide).encode()) < 256 + 20


def test_an_instances_error_quotes_the_item_cut_to_256_bytes() -> None:
    row = list(range(500))
    body = json.dumps({"instances": [{"a": 1, "b": row, "c": 3}, {"a": 2, "b": row}]}).encode()
    with pytest.raises(JsonError) as info:
        predict_inputs_from_json(parse_json(body), {"a": INT32, "b": INT32, "c": INT32}, body)
    message = info.value.message
    assert message.startswith("Failed to process element: 1 of 'instances' list. JSON object: {")
    assert message.endswith(" keys must be equal to: a,b,c")
    assert '"b": [0, 1, 2, ' in message and "499" not in message
    assert len(message) < 256 + 120


# ------------------------------------------------------------ the iterative reader itself


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, "x", {"b": null, "c": [true, false, [], {}]}], "d": -0, "e": 1e5}',
        " [ [ ] , [ 1 ] , { } ] ",
        '"\\u00e9\\n"',
        "-12",
        "[[[1]],[2,[3, [4]]]]",
        '{"k": [[["\\""]]]}',
    ],
)
def test_the_iterative_reader_reads_what_json_reads(text: str) -> None:
    assert read_deep(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[1 2]", "Missing a comma or ']' after an array element. at offset: 3"),
        ('{"a" 1}', "Missing a colon after a name of object member. at offset: 5"),
        ('{"a":1 "b"}', "Missing a comma or '}' after an object member. at offset: 7"),
        ("{1:2}", "Missing a name for object member. at offset: 1"),
        ("[1,]", "Invalid value. at offset: 3"),
        ('["abc', "Missing a closing quotation mark in string. at offset: 5"),
        ('{"a":[1}', "Missing a comma or ']' after an array element. at offset: 7"),
    ],
)
def test_the_iterative_reader_says_what_rapidjson_says(text: str, error: str) -> None:
    with pytest.raises(JsonSyntaxError) as info:
        read_deep(text)
    assert str(info.value) == error


def test_a_deep_malformed_body_is_one_parse_error() -> None:
    body = b'{"instances": [1], "x": ' + b"[" * DEEP + b"]" * (DEEP - 1) + b"}"
    with pytest.raises(JsonError) as info:
        parse_json(body)
    assert info.value.message == (
        f"JSON Parse error: Missing a comma or ']' after an array element. at offset: {len(body) - 1}"
    )


def test_doubles_are_written_as_rapidjson_writes_them() -> None:
    values = [2.5, 100.0, 1e-5, 1.5e-7, 1e300, -0.0, 0.1, 123456.789, -3e-6, 1e-6]
    texts = [
        "2.5",
        "100.0",
        "0.00001",
        "1.5e-7",
        "1e300",
        "-0.0",
        "0.1",
        "123456.789",
        "-0.000003",
        "0.000001",
    ]
    assert [rapidjson_double(v) for v in values] == texts
    assert rapidjson_double(float("inf")) is None
    for value in values:  # each one reads back to the same double
        assert float(rapidjson_double(value) or "nan") == value
