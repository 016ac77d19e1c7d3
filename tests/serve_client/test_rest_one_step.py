"""The REST client's one-step paths give what its full paths give: an answer read by one
numpy step is the array (or the error) of the per-value rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tfship._wire import JsonError, answer_from_json

NAN, INF = float("nan"), float("inf")


def _outcome(value: Any, dtype: str, bool_free: bool) -> np.ndarray | JsonError:
    try:
        return answer_from_json(value, dtype, bool_free)
    except JsonError as exc:
        return exc


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        ([[0.25, 0.75, -0.5]], "float32"),
        ([[16777215.0, -16777215.0]], "float32"),
        ([16777216.0, 0.5], "float32"),  # at the limit: the long way, same answer
        ([[-16777216.0, 1]], "float32"),
        ([16777217, 0.5], "float32"),  # an integer float32 cannot hold: an error
        ([-16777217, 0.5], "float32"),
        ([[1e39, 1.0]], "float32"),
        ([NAN, 1.5], "float32"),
        ([[INF, -INF, 3.0]], "float32"),
        ([NAN, 16777217], "float32"),
        ([2**53 + 1, 0.5], "float64"),
        ([2**53 - 1, -0.5], "float64"),
        ([[NAN, 1e300]], "float64"),
        ([[1, 2], [3, 4]], "float32"),
        (0.5, "float32"),
        ([], "float32"),
    ],
)
def test_an_answer_read_in_one_step_is_the_per_value_rules(value: Any, dtype: str) -> None:
    exact, fast = _outcome(value, dtype, False), _outcome(value, dtype, True)
    if isinstance(exact, JsonError):
        assert isinstance(fast, JsonError) and (fast.code, fast.message) == (exact.code, exact.message)
        return
    assert isinstance(fast, np.ndarray)
    assert (fast.dtype, fast.shape) == (exact.dtype, exact.shape)
    np.testing.assert_array_equal(fast, exact)
