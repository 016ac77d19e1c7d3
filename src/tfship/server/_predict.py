"""Predict's reading of a request against its signature, in TF Serving's words and order.

``PredictPlan`` (what one signature needs for Predict, read once per loaded version), the
``tensor_content`` readers it uses, ``predict_feeds`` and ``check_feed_dtypes`` (the checks of
``predict_util.cc`` and of the session's call frame), the output filter and output dtypes, and
the runs of a version that make the engine's failures statuses. ``ServingCore`` and the Open
Inference Protocol call them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire import (
    DT_STRING,
    PredictRequest,
    SignatureDef,
    TensorDecodeError,
    TensorProto,
    UncarriedDtypeError,
    decode_tensor,
    enum_of_array,
    tensor_numpy_dtype,
)
from tfship._wire import tf_dtype_name as dtype_name
from tfship.server._manager import Servable
from tfship.server._status import RpcError, invalid


def _keys(mapping: Iterable[str]) -> str:
    return ",".join(sorted(mapping))


class PredictPlan:
    """What a Predict request on one signature needs of it, read once per loaded version.

    ``feeds`` takes the common request (every input given, each of its signature's dtype, no
    output filter) in one pass; any other request goes through ``predict_feeds`` and the
    checks after it, which say what is wrong in TF Serving's words and order.
    """

    def __init__(
        self,
        inputs: list[tuple[str, int]],
        outputs: list[str],
        output_enums: list[int] | None = None,
        runner: Callable[[Mapping[str, NDArray[Any]]], list[Any]] | None = None,
    ) -> None:
        self.inputs = inputs  # (alias, DataType number), sorted by alias
        self.outputs = outputs  # every output alias, sorted
        # each output's signature dtype, written for a value whose numpy type has no TF twin
        self.output_enums = output_enums or [0] * len(outputs)
        #: the version's run of the signature's inputs to ``outputs`` (None: run it otherwise)
        self.runner = runner
        # (alias, DataType, numpy dtype, its little-endian twin) of inputs read from
        # tensor_content without decode_tensor; None for the other dtypes (strings, ...)
        self._content: list[tuple[str, int, Any, Any] | None] = [
            _content_reader(alias, want) for alias, want in inputs
        ]

    @classmethod
    def of(
        cls,
        signature: SignatureDef,
        runner: Callable[[Mapping[str, NDArray[Any]]], list[Any]] | None = None,
    ) -> PredictPlan:
        """The plan of ``signature``; ``runner`` runs its inputs to all its outputs (sorted)."""
        inputs = [(alias, int(signature.inputs[alias].dtype)) for alias in sorted(signature.inputs)]
        outputs = sorted(signature.outputs)
        enums = [int(signature.outputs[alias].dtype) for alias in outputs]
        return cls(inputs, outputs, enums, runner)

    def feeds(self, request: PredictRequest) -> dict[str, NDArray[Any]] | None:
        """The decoded feeds of a request that passes every check, else None.

        A dense tensor in ``tensor_content`` whose size fits its shape is read in place; any
        other tensor goes through ``decode_tensor``, and any doubt returns None, so that the
        full checks say what is wrong.
        """
        inputs = request.inputs
        if request.output_filter or len(inputs) != len(self.inputs):
            return None
        feeds: dict[str, NDArray[Any]] = {}
        for (alias, want), reader in zip(self.inputs, self._content):
            proto = inputs.get(alias)
            if proto is None or (want and proto.dtype != want):
                return None
            content = proto.tensor_content if reader is not None else b""
            if content and reader is not None:
                value = _read_content(content, proto.tensor_shape.dim, reader)
                if value is None:
                    return None
                feeds[alias] = value
                continue
            try:
                feeds[alias] = decode_tensor(proto)
            except TensorDecodeError:
                return None
        return feeds

    def answer(self, values: Sequence[Any]) -> list[tuple[str, NDArray[Any], int]]:
        """The outputs' values (in the order of ``outputs``) as the answer's entries."""
        entries = []
        for alias, value, fallback in zip(self.outputs, values, self.output_enums):
            value = np.asarray(value)
            try:
                enum = enum_of_array(value)
            except TypeError:  # a numpy type without a TF twin takes the signature's
                enum = fallback
            entries.append((alias, value, enum))
        return entries


def _content_reader(alias: str, want: int) -> tuple[str, int, Any, Any] | None:
    if not want or want == DT_STRING:
        return None
    try:
        dtype = tensor_numpy_dtype(want)
        return alias, want, dtype, dtype.newbyteorder("<")
    except (TensorDecodeError, TypeError, ValueError):
        return None


def _read_content(
    content: bytes, dims: Iterable[Any], reader: tuple[str, int, Any, Any]
) -> NDArray[Any] | None:
    """``decode_tensor``'s reading of a non-empty ``tensor_content`` for the shape ``dims``,
    or None where decode_tensor would refuse it or read it otherwise (an empty shape)."""
    shape = [d.size for d in dims]
    if len(shape) > 254:
        return None
    count = 1
    for size in shape:
        if size < 0:
            return None
        count *= size
    dtype = reader[2]
    if count == 0 or count * dtype.itemsize != len(content):
        return None
    # one copy, as decode_tensor makes: aligned, writable, independent of the message
    value: NDArray[Any] = np.frombuffer(content, dtype=reader[3]).astype(dtype).reshape(shape)
    return value


def predict_feeds(signature: SignatureDef, inputs: Mapping[str, TensorProto]) -> dict[str, NDArray[Any]]:
    """Check the request inputs against the signature and decode them (TF's GetInputValues)."""
    sig_inputs, defaults = signature.inputs, signature.defaults
    if len(inputs) > len(sig_inputs) or (len(inputs) < len(sig_inputs) and not defaults):
        extra = sorted(set(inputs) - set(sig_inputs))
        missing = sorted(set(sig_inputs) - set(inputs))
        raise invalid(
            f"input size does not match signature: {len(inputs)}!={len(sig_inputs)} "
            f"len({{{_keys(inputs)}}}) != len({{{_keys(sig_inputs)}}}). "
            f"Sent extra: {{{','.join(extra)}}}. Missing but required: {{{','.join(missing)}}}."
        )
    feeds: dict[str, NDArray[Any]] = {}
    used: list[str] = []
    for alias in sorted(sig_inputs):
        info = sig_inputs[alias]
        if alias in inputs:
            proto = inputs[alias]
            used.append(alias)
        elif alias in defaults:
            proto = defaults[alias]
        else:
            raise invalid(
                f"Signature input alias: {alias}(feed name: {info.name}) not found in request "
                f"and no default value provided. Inputs expected to be in the request "
                f"{{{_keys(inputs)}}}, or default input alias set: {_keys(defaults)}"
            )
        try:
            feeds[alias] = decode_tensor(proto)
        except UncarriedDtypeError as exc:  # TensorFlow would read it: say why tfship does not
            raise invalid(f"tensor parsing error: {alias}: {exc}") from exc
        except TensorDecodeError as exc:
            raise invalid(f"tensor parsing error: {alias}") from exc
    if inputs and len(used) != len(inputs):
        raise invalid(
            f"Inputs contains invalid name. Used request inputs: {','.join(sorted(used))}, "
            f"request input: {_keys(inputs)}"
        )
    return feeds


def check_feed_dtypes(signature: SignatureDef, inputs: Mapping[str, TensorProto]) -> None:
    """The session's call-frame check: each fed tensor has its signature input's dtype."""
    for index, alias in enumerate(sorted(signature.inputs)):
        proto = inputs.get(alias, signature.defaults.get(alias))
        want = int(signature.inputs[alias].dtype)
        if proto is not None and want and int(proto.dtype) != want:
            raise invalid(
                f"Expects arg[{index}] to be {dtype_name(want)} but "
                f"{dtype_name(int(proto.dtype))} is provided"
            )


def _output_aliases(signature: SignatureDef, output_filter: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    for alias in output_filter:
        if alias not in signature.outputs:
            raise invalid(
                f"output tensor alias not found in signature: {alias} Outputs expected to be "
                f"in the set {{{_keys(signature.outputs)}}}."
            )
        if alias in seen:
            raise invalid(f"duplicate output tensor alias: {alias}")
        seen.add(alias)
    return list(output_filter) if output_filter else sorted(signature.outputs)


def _output_enum(signature: SignatureDef, alias: str, value: NDArray[Any]) -> int:
    # Tensor::AsProtoField writes the tensor's own dtype; numpy types without a TF twin
    # take the signature's.
    try:
        return enum_of_array(value)
    except TypeError:
        return int(signature.outputs[alias].dtype)


def _run(
    servable: Servable, feeds: Mapping[str, Any], key: str, outputs: Sequence[str]
) -> dict[str, NDArray[Any]]:
    from tfship.server._status import from_exception

    try:
        result = servable.run(feeds, key, outputs)
    except RpcError:
        raise
    except Exception as exc:  # the engine's failures become statuses, never tracebacks
        raise from_exception(exc) from exc
    return {alias: np.asarray(result[alias]) for alias in outputs}


def _run_tensors(
    servable: Servable, feeds: Mapping[str, Any], fetches: Mapping[str, tuple[str, str]]
) -> dict[str, NDArray[Any]]:
    from tfship.server._status import from_exception

    try:
        result = servable.run_tensors(feeds, fetches)
    except RpcError:
        raise
    except Exception as exc:  # the engine's failures become statuses, never tracebacks
        raise from_exception(exc) from exc
    return {name: np.asarray(value) for name, value in result.items()}
