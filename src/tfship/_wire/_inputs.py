"""Feeds checked against a signature: names, dtypes and shapes, with one message format and
one cast rule, for every caller that runs a signature (the serving client, ``LocalModel``).

Pure numpy: no TensorFlow, no I/O. A signature is anything with ``key`` and ``inputs`` (input
key -> an object with ``dtype``, tfship's numpy-style name such as ``float32`` or ``string``,
and ``shape``, a tuple with ``None`` for an unknown dimension, or ``None`` for an unknown
rank), as ``tfship.inspect.SignatureInfo`` has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tfship.errors import value_text

__all__ = ["InputCheckError", "cast_array", "check_inputs", "shape_text"]

_STRING_KINDS = frozenset("OSU")
# The largest integer each float type holds exactly (its mantissa bits + 1).
_EXACT_INT_IN_FLOAT = {"float16": 2**11, "float32": 2**24, "float64": 2**53}


class InputCheckError(ValueError):
    """Raised by :func:`check_inputs` when feeds do not fit a signature.

    ``input`` is the input key at fault, or None when the set of names is wrong.
    """

    def __init__(self, message: str, *, input: str | None = None) -> None:  # noqa: A002
        super().__init__(message)
        self.input = input


def shape_text(shape: Any) -> str:
    """A signature shape as tfship prints it: ``[?, 3]``, or ``[?...]`` for an unknown rank.

    Example:
        >>> shape_text((None, 3)), shape_text(()), shape_text(None)
        ('[?, 3]', '[]', '[?...]')
    """
    if shape is None:
        return "[?...]"
    return "[" + ", ".join("?" if d is None or d < 0 else str(d) for d in shape) + "]"


Array = np.ndarray[Any, Any]


def check_inputs(
    signature: Any, feeds: Mapping[str, Any], *, cast: bool = False, shapes: bool = True
) -> dict[str, Any]:
    """Check ``feeds`` against ``signature`` and return them as numpy arrays of its dtypes.

    The contract, for every caller:

    - **Names**: every input of the signature is fed, except those with a default in the
      ``SignatureDef`` (``signature.proto.defaults``), and nothing else is.
    - **Values**: a numpy array of the input's dtype is returned as it is (not copied); for a
      ``string`` input an array of object, bytes or str. Python values (lists, scalars,
      ``str``/``bytes``) have no dtype of their own and take the input's under the cast rule
      below; so do numpy arrays of another dtype, but only with ``cast=True`` (without it they
      are an error that says how to convert them). Inputs of dtype ``invalid`` or of a type
      numpy cannot hold are returned as ``np.asarray`` makes them.
    - **The cast rule**: a value may change only by float rounding. Booleans become any
      number; integers become integers within range, and floats when exactly representable;
      floats become floats (rounded, never overflowing) or integers when whole and in range;
      complex numbers stay complex. Strings never become numbers, nor numbers strings.
    - **Shapes**: the rank must match and every known dimension must be equal. With
      ``shapes=False`` shapes are left to the graph's ops, as TF Serving leaves them
      (``LocalModel.run``, the exact call).
    - **Sparse inputs** (an input whose ``encoding`` is not ``dense``, such as ``coo_sparse``)
      are named but returned unchecked, as given: their parts are the caller's to check.
    - **Errors**: one :class:`InputCheckError` (a ``ValueError``), one line, starting with
      ``signature 'KEY' input 'NAME':`` and saying what was expected and what was given, with
      shapes written ``[?, 3]``. Callers may prefix where they are (``model 'm' ``) and
      re-raise it as their own error class. ``feeds`` is never modified.

    Example:
        >>> from types import SimpleNamespace as S
        >>> sig = S(key="serving_default", inputs={"x": S(dtype="float32", shape=(None, 2))})
        >>> check_inputs(sig, {"x": [[1, 2]]})["x"].dtype
        dtype('float32')
        >>> check_inputs(sig, {"x": [1.0, 2.0]})
        Traceback (most recent call last):
        ...
        tfship._wire._inputs.InputCheckError: signature 'serving_default' input 'x': shape [2] \
does not fit the signature's [?, 2] (? = any size)
    """
    if not isinstance(feeds, Mapping):
        raise TypeError(f"feeds must be a mapping of input key -> values, not {type(feeds).__name__}")
    _check_names(signature, feeds)
    return {key: _checked(signature, key, value, cast, shapes) for key, value in feeds.items()}


def cast_array(array: Array, want: str, *, where: str) -> Array:
    """``array`` as the signature dtype ``want`` under the one cast rule (see check_inputs).

    ``where`` starts the message (``signature 'serving_default' input 'x'``), so every caller
    reports a refused cast in the same words.

    Example:
        >>> cast_array(np.array([1, 2]), "float32", where="input 'x'").dtype
        dtype('float32')
        >>> cast_array(np.array([1.5]), "int64", where="input 'n'")
        Traceback (most recent call last):
        ...
        tfship._wire._inputs.InputCheckError: input 'n': dtype float64 does not match the \
signature's int64 and cannot be cast to it (1.5 is not a whole number)
    """
    target = _target_dtype(want)
    if target is None or array.dtype == target:
        return array
    got = "string" if array.dtype.kind in _STRING_KINDS else array.dtype.name
    why = _cast_problem(array, target)
    if why is not None:
        raise InputCheckError(
            f"{where}: dtype {got} does not match the signature's {want} and cannot be cast to it ({why})"
        )
    return array.astype(target)


def _check_names(signature: Any, feeds: Mapping[str, Any]) -> None:
    expected = signature.inputs
    if feeds.keys() == expected.keys():  # every input, nothing else: the usual call
        return
    defaults = set(getattr(getattr(signature, "proto", None), "defaults", None) or ())
    unknown = sorted(set(feeds) - set(expected))
    missing = sorted(set(expected) - set(feeds) - defaults)
    if not unknown and not missing:
        return
    problems = [f"unknown input {name!r}" for name in unknown]
    problems += [f"missing input {name!r}" for name in missing]
    described = ", ".join(f"{k}: {info.dtype} {shape_text(info.shape)}" for k, info in expected.items())
    raise InputCheckError(
        f"signature {signature.key!r}: {'; '.join(problems)}; "
        f"the signature expects {described or '(no inputs)'}"
    )


def _checked(signature: Any, key: str, value: Any, cast: bool, shapes: bool) -> Any:
    where = f"signature {signature.key!r} input {key!r}"
    info = signature.inputs[key]
    if getattr(info, "encoding", "dense") != "dense":
        return value
    target = _target_dtype(info.dtype)
    if target is None:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
    elif isinstance(value, np.ndarray):
        array = _checked_array(where, key, value, info.dtype, cast)
    else:
        array = _from_python(where, key, value, info.dtype)
    if shapes:
        _check_shape(where, key, array.shape, info.shape)
    return array


def _target_dtype(name: str) -> np.dtype[Any] | None:
    """The numpy dtype of a signature dtype name; None when numpy cannot hold it."""
    if name in _TARGETS:
        return _TARGETS[name]
    target = _find_target_dtype(name)
    if len(_TARGETS) < 64:  # signature dtype names: a few dozen at most
        _TARGETS[name] = target
    return target


_TARGETS: dict[str, np.dtype[Any] | None] = {}


def _find_target_dtype(name: str) -> np.dtype[Any] | None:
    if name == "string":
        return np.dtype(object)
    if name == "bfloat16":
        import ml_dtypes  # ships with TensorFlow; only needed for bfloat16 inputs

        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(name)
    except TypeError:
        return None


def _checked_array(where: str, key: str, value: Array, want: str, cast: bool) -> Array:
    got = _NAMES.get(value.dtype)
    if got is None:  # a dtype's name costs more than the rest of a small input's check
        got = "string" if value.dtype.kind in _STRING_KINDS else value.dtype.name
        if len(_NAMES) < 256:
            _NAMES[value.dtype] = got
    if got == want:
        return value
    if not cast:
        raise InputCheckError(
            f"{where}: dtype {got} does not match the signature's {want}; convert it first "
            f"(array.astype({want!r})) or pass cast=True",
            input=key,
        )
    return _cast(where, key, value, want)


_NAMES: dict[np.dtype[Any], str] = {}


def _from_python(where: str, key: str, value: Any, want: str) -> Array:
    if want == "string":
        return _strings(where, key, value)
    if want == "float32" and isinstance(value, list):
        from tfship._wire._tensor_encode import _float_list  # the packed path for lists of floats

        fast = _float_list(value)
        if fast is not None:
            return fast
    try:
        array = np.asarray(value)
    except ValueError:
        raise InputCheckError(f"{where}: {_not_an_array(value)}", input=key) from None
    if array.dtype == object or _maybe_past_int64(array, want):
        huge = _huge_int(np.asarray(value, dtype=object), want)
        if huge is not None:
            target = _target_dtype(want)
            if target is not None and target.kind in "iu":
                raise InputCheckError(f"{where}: {huge} is outside the range of {want}", input=key)
            raise InputCheckError(f"{where}: the integer {huge} is not exact in {want}", input=key)
    if array.dtype.kind in _STRING_KINDS:
        raise InputCheckError(f"{where}: expected {want} numbers, got strings or other objects", input=key)
    return _cast(where, key, array, want)


def _not_an_array(value: Any) -> str:
    """Why nested lists do not form an array, in the words of the lists: which row is ragged."""
    ragged = _ragged(value, [])
    if ragged is not None:
        return ragged
    return "the values do not form an array (nested lists of one shape are needed)"


def _ragged(value: Any, at: list[int]) -> str | None:
    if not isinstance(value, (list, tuple)):
        return None
    lengths = [len(item) if isinstance(item, (list, tuple)) else None for item in value]
    for index, length in enumerate(lengths):
        if length != lengths[0]:
            first, other = ([*at, 0], [*at, index])
            return (
                f"the lists are ragged: row {_path(other)} has {_count(length)} where row "
                f"{_path(first)} has {_count(lengths[0])}; every row needs the same length"
            )
    for index, item in enumerate(value):
        found = _ragged(item, [*at, index])
        if found is not None:
            return found
    return None


def _path(index: list[int]) -> str:
    return "".join(f"[{i}]" for i in index)


def _count(length: int | None) -> str:
    if length is None:
        return "a single value"
    return f"{length} value" if length == 1 else f"{length} values"


def _maybe_past_int64(array: Array, want: str) -> bool:
    """Python ints past int64 mixed with others become float64 (or uint64) in numpy, where
    the range check of an integer input cannot see them: look at the ints themselves."""
    target = _target_dtype(want)
    if array.dtype.kind not in "fu" or not array.size or target is None or target.kind not in "iu":
        return False
    return float(np.abs(array).max()) >= 2**53


def _huge_int(array: Array, want: str) -> int | None:
    """The first Python int of an object array outside the range of ``want`` (an integer
    dtype) or of every numpy integer, if any."""
    target = _target_dtype(want)
    low, high = -(2**63), 2**64 - 1
    if target is not None and target.kind in "iu":
        low, high = int(np.iinfo(target).min), int(np.iinfo(target).max)
    for item in array.reshape(-1).tolist():
        if isinstance(item, int) and not isinstance(item, bool) and not low <= item <= high:
            return item
    return None


def _strings(where: str, key: str, value: Any) -> Array:
    if isinstance(value, (str, bytes)):
        array = np.empty((), dtype=object)
        array[()] = value
        return array
    ragged = _ragged(value, [])  # numpy would make an array of lists of them
    if ragged is not None:
        raise InputCheckError(f"{where}: {ragged}", input=key)
    try:
        array = np.asarray(value, dtype=object)
    except ValueError:
        raise InputCheckError(f"{where}: {_not_an_array(value)}", input=key) from None
    for item in array.reshape(-1):
        if not isinstance(item, (str, bytes)):
            raise InputCheckError(
                f"{where}: expected string values (str or bytes), "
                f"got {type(item).__name__} {value_text(item)}",
                input=key,
            )
    return array


def _cast(where: str, key: str, array: Array, want: str) -> Array:
    try:
        return cast_array(array, want, where=where)
    except InputCheckError as exc:
        raise InputCheckError(str(exc), input=key) from None


def _cast_problem(array: Array, target: np.dtype[Any]) -> str | None:
    kind, goal = array.dtype.kind, target.kind
    if kind in _STRING_KINDS or goal == "O":
        return "strings and numbers do not convert into each other"
    if kind == "b" or goal not in "biuf":  # booleans feed any number; any number a complex
        return None
    if goal == "b":
        return "only booleans feed a bool input"
    if kind == "c":
        return "complex numbers become complex numbers only"
    if goal == "f":
        return _to_float_problem(array, target)
    return _to_int_problem(array, target)


def _to_float_problem(array: Array, target: np.dtype[Any]) -> str | None:
    if array.dtype.kind in "iu":
        limit = _EXACT_INT_IN_FLOAT.get(target.name, 2**53)
        flat = array.reshape(-1)
        too_big = np.abs(flat.astype(np.float64)) > limit
        if too_big.any():
            return f"{flat[np.argmax(too_big)]} is not exact in {target.name} (|x| > {limit})"
        return None
    finite = array[np.isfinite(array)]
    if finite.size and float(np.abs(finite).max()) > float(np.finfo(target).max):
        return f"a value overflows {target.name}"
    return None


def _to_int_problem(array: Array, target: np.dtype[Any]) -> str | None:
    if array.dtype.kind == "f":
        flat = array.reshape(-1)
        bad = ~np.isfinite(flat) | (flat != np.round(flat))
        if bad.any():
            return f"{value_text(flat[np.argmax(bad)])} is not a whole number"
    info = np.iinfo(target)
    if array.size and (array.min() < info.min or array.max() > info.max):
        flat = array.reshape(-1)
        bad = flat[np.argmax((flat < info.min) | (flat > info.max))]
        return f"{bad} is outside the range of {target.name}"
    return None


def _check_shape(where: str, key: str, shape: tuple[int, ...], expected: Any) -> None:
    if expected is None:
        return
    fits = len(shape) == len(expected)
    for want, got in zip(expected, shape) if fits else ():
        if want is not None and want >= 0 and want != got:
            fits = False
            break
    if not fits:
        raise InputCheckError(
            f"{where}: shape {list(shape)} does not fit the signature's {shape_text(expected)} "
            "(? = any size)",
            input=key,
        )
