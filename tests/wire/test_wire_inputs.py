"""check_inputs: names, dtypes, shapes and the one cast rule, with one message format."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tfship._wire._inputs import InputCheckError, check_inputs, shape_text


def _signature(**inputs: tuple[str, Any]) -> Any:
    table = {k: SimpleNamespace(dtype=d, shape=s) for k, (d, s) in inputs.items()}
    return SimpleNamespace(key="serving_default", inputs=table)


SIG = _signature(x=("float32", (None, 3)), ids=("int32", (None,)), text=("string", (None,)))


def _feeds(**overrides: Any) -> dict[str, Any]:
    feeds: dict[str, Any] = {"x": [[1.0, 2.0, 3.0]], "ids": [7], "text": ["a"]}
    feeds.update(overrides)
    return {k: v for k, v in feeds.items() if v is not None}


def test_python_values_take_the_signature_dtypes() -> None:
    out = check_inputs(SIG, _feeds(x=[[1, 2, 3]], text=[b"\xff"]))
    assert out["x"].dtype == np.float32 and out["x"].tolist() == [[1.0, 2.0, 3.0]]
    assert out["ids"].dtype == np.int32
    assert out["text"].dtype == object and out["text"].tolist() == [b"\xff"]


def test_arrays_of_the_right_dtype_are_not_copied() -> None:
    x = np.ones((2, 3), np.float32)
    text = np.array(["a", "b"])
    out = check_inputs(SIG, _feeds(x=x, text=text, ids=np.array([1, 2], np.int32)))
    assert out["x"] is x and out["text"] is text


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        (
            _feeds(ids=None, z=[1]),
            r"^signature 'serving_default': unknown input 'z'; missing input 'ids'; "
            r"the signature expects x: float32 \[\?, 3\], ids: int32 \[\?\], text: string \[\?\]$",
        ),
        (_feeds(x=[1.0, 2.0, 3.0]), r"input 'x': shape \[3\] does not fit the signature's \[\?, 3\]"),
        (_feeds(x=[[1.0, 2.0]]), r"input 'x': shape \[1, 2\] does not fit"),
        (
            _feeds(x=np.ones((1, 3))),
            r"input 'x': dtype float64 does not match the signature's float32; "
            r"convert it first \(array.astype\('float32'\)\) or pass cast=True",
        ),
        (_feeds(x=[["a", "b", "c"]]), r"input 'x': expected float32 numbers, got strings"),
        (_feeds(ids=[1.5]), r"input 'ids': .*cannot be cast to it \(1.5 is not a whole number\)"),
        # a value read from an array is written as numpy 1 wrote it, not as np.float32(0.1)
        (_feeds(ids=[np.float32(0.1)]), r"cannot be cast to it \(0\.1 is not a whole number\)$"),
        (_feeds(ids=[2**40]), r"input 'ids': .*outside the range of int32"),
        (_feeds(ids=[1, 2**70]), r"input 'ids': 1180591620717411303424 is outside the range of int32$"),
        (_feeds(ids=[1, 2**63]), r"input 'ids': 9223372036854775808 is outside the range of int32$"),
        (_feeds(text=[1]), r"input 'text': expected string values \(str or bytes\), got int 1"),
        (_feeds(text=[np.float64(1.5)]), r"input 'text': expected string values .*, got float64 1\.5$"),
        (_feeds(text=[["a", "b"], ["c"]]), r"input 'text': the lists are ragged: row \[1\] has 1 value"),
        (_feeds(x=[[1.0, 2.0], [3.0]]), r"input 'x': the lists are ragged: row \[1\] has 1 value"),
    ],
)
def test_mismatches_are_one_line_errors(feeds: dict[str, Any], message: str) -> None:
    with pytest.raises(InputCheckError, match=message) as info:
        check_inputs(SIG, feeds)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_cast_allows_only_changes_by_rounding() -> None:
    out = check_inputs(SIG, _feeds(x=np.full((1, 3), 0.1), ids=np.array([3], np.int64)), cast=True)
    assert out["x"].dtype == np.float32 and out["ids"].dtype == np.int32
    bools = _signature(b=("float64", None))
    assert check_inputs(bools, {"b": np.array([True])}, cast=True)["b"].tolist() == [1.0]
    for bad, why in [
        (np.array([1e300]), "overflows float32"),
        (np.array([2**25]), "not exact in float32"),
        (np.array(["1.0"]), "strings and numbers"),
        (np.array([1j]), "complex numbers"),
    ]:
        with pytest.raises(InputCheckError, match=why):
            check_inputs(_signature(x=("float32", None)), {"x": bad}, cast=True)
    with pytest.raises(InputCheckError, match="only booleans feed a bool input"):
        check_inputs(_signature(flag=("bool", None)), {"flag": np.array([1])}, cast=True)


def test_inputs_with_defaults_may_be_left_out() -> None:
    sig = _signature(x=("float32", None), k=("int32", ()))
    sig.proto = SimpleNamespace(defaults={"k": object()})
    assert set(check_inputs(sig, {"x": [1.0]})) == {"x"}


def test_feeds_are_never_modified() -> None:
    x = np.full((1, 3), 0.5)
    feeds = {"x": x, "ids": [1], "text": ["a"]}
    check_inputs(SIG, feeds, cast=True)
    assert feeds["x"] is x and x.dtype == np.float64 and feeds["ids"] == [1]


def test_shape_text() -> None:
    assert shape_text((None, -1, 3)) == "[?, ?, 3]"
    assert shape_text(None) == "[?...]"


def test_sparse_inputs_are_named_but_left_to_the_caller() -> None:
    sig = _signature(ids=("int64", (None,)))
    sig.inputs["ids"].encoding = "coo_sparse"
    triple = (np.zeros((1, 1), np.int64), np.array([3]), np.array([4]))
    assert check_inputs(sig, {"ids": triple})["ids"] is triple
    with pytest.raises(InputCheckError, match="missing input 'ids'"):
        check_inputs(sig, {})
