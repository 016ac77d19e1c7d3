"""Classify and Regress on ``tf.Example`` input, as TF Serving's ``classifier.cc`` and
``regressor.cc`` check and answer them.

The request's Examples as the signature's one string input, the signature's checks before the
run (``classification_outputs``, ``regression_outputs``) and the outputs' checks after it, that
fill a ``ClassificationResult`` or ``RegressionResult``. ``ServingCore`` calls them for
Classify, Regress and MultiInference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire import (
    CLASSIFY_METHOD,
    DT_FLOAT,
    DT_STRING,
    REGRESS_METHOD,
    ClassificationResult,
    Input,
    RegressionResult,
    SignatureDef,
    dtype_enum_name,
    enum_of_array,
)
from tfship.server._status import invalid


def _debug_shape_text(shape: Sequence[int]) -> str:
    # TensorShape::DebugString of a value's shape, "[2,3]": TF Serving's texts print it so;
    # tfship._wire.shape_text prints a signature's shape, "[?, 3]", in tfship's own messages.
    return "[" + ",".join(str(d) for d in shape) + "]"


def serialized_examples(input_proto: Input) -> NDArray[Any]:
    """The request's Examples as a 1-D string tensor; context bytes are prepended (merge)."""
    kind = input_proto.WhichOneof("kind")
    if kind == "example_list":
        blobs = [e.SerializeToString() for e in input_proto.example_list.examples]
    elif kind == "example_list_with_context":
        with_context = input_proto.example_list_with_context
        context = with_context.context.SerializeToString()
        blobs = [context + e.SerializeToString() for e in with_context.examples]
    else:
        blobs = []
    if not blobs:
        raise invalid("Input is empty.")
    out = np.empty(len(blobs), dtype=object)
    out[:] = blobs
    return out


def _check_example_method(signature: SignatureDef, method: str) -> None:
    # --enable_signature_method_name_check for Classify and Regress (and their MultiInference).
    if signature.method_name != method:
        kind = "classification" if method == CLASSIFY_METHOD else "regression"
        raise invalid(f"Expected {kind} signature method_name to be {method}. Was: " + signature.method_name)


def classification_outputs(signature: SignatureDef, method_check: bool) -> list[str]:
    """TF Serving's PreProcessClassification: the output aliases to fetch, or the error."""
    if method_check:
        _check_example_method(signature, CLASSIFY_METHOD)
    if len(signature.inputs) != 1:
        raise invalid("Expected one input Tensor.")
    if len(signature.outputs) not in (1, 2):
        raise invalid(f"Expected one or two output Tensors, found {len(signature.outputs)}")
    if "inputs" not in signature.inputs:
        raise invalid(f"No classification inputs found in SignatureDef: {signature}")
    outputs = [k for k in ("classes", "scores") if k in signature.outputs]
    if not outputs:
        raise invalid(
            'Expected classification signature outputs to contain at least one of "classes" or '
            f'"scores". Signature was: {signature}'
        )
    return outputs


def regression_outputs(signature: SignatureDef, method_check: bool) -> list[str]:
    """TF Serving's PreProcessRegression: ``["outputs"]`` or the error."""
    if method_check:
        _check_example_method(signature, REGRESS_METHOD)
    if len(signature.inputs) != 1:
        raise invalid("Expected one input Tensor.")
    if len(signature.outputs) != 1:
        raise invalid("Expected one output Tensor.")
    if "inputs" not in signature.inputs:
        raise invalid(f"No regression inputs found in SignatureDef: {signature}")
    if "outputs" not in signature.outputs:
        raise invalid(f"No regression outputs found in SignatureDef: {signature}")
    return ["outputs"]


def _check_class_tensor(name: str, value: NDArray[Any], want: int, num_examples: int) -> None:
    if value.ndim != 2:
        raise invalid(
            f"Expected Tensor shape: [batch_size num_classes] but got {_debug_shape_text(value.shape)}"
        )
    enum = enum_of_array(value)
    if enum != want:
        kind = "DT_STRING" if want == DT_STRING else "DT_FLOAT"
        raise invalid(f"Expected {name} Tensor of {kind}. Got: {dtype_enum_name(enum)}")
    if value.shape[0] != num_examples:
        raise invalid(f"Expected {name} output batch size of {num_examples}. Got: {value.shape[0]}")


def fill_classifications(
    result: ClassificationResult, values: Mapping[str, NDArray[Any]], num_examples: int
) -> None:
    """TF Serving's PostProcessClassificationResult into a ``ClassificationResult``."""
    classes, scores = values.get("classes"), values.get("scores")
    if classes is not None:
        _check_class_tensor("classes", classes, DT_STRING, num_examples)
    if scores is not None:
        _check_class_tensor("scores", scores, DT_FLOAT, num_examples)
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise invalid(
            "Tensors class and score should match in dim_size(1). Got "
            f"{classes.shape[1]} vs. {scores.shape[1]}"
        )
    width = (classes if classes is not None else scores).shape[1]  # type: ignore[union-attr]
    for row in range(num_examples):
        entry = result.classifications.add()
        for column in range(width):
            cls = entry.classes.add()
            if classes is not None:
                label = classes[row, column]
                text = label if isinstance(label, bytes) else str(label).encode()
                cls.label = text.decode("utf-8", errors="replace")
            if scores is not None:
                cls.score = float(scores[row, column])


def fill_regressions(result: RegressionResult, value: NDArray[Any], num_examples: int) -> None:
    """TF Serving's PostProcessRegressionResult into a ``RegressionResult``."""
    if not (value.ndim == 1 or (value.ndim == 2 and value.shape[1] == 1)):
        raise invalid(
            "Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got "
            + _debug_shape_text(value.shape)
        )
    if value.shape[0] != num_examples:
        raise invalid(
            f"Input batch size did not match output batch size: {num_examples} vs. {value.shape[0]}"
        )
    enum = enum_of_array(value)
    if enum != DT_FLOAT:
        raise invalid(f"Expected output Tensor of DT_FLOAT.  Got: {dtype_enum_name(enum)}")
    for number in value.reshape(-1).tolist():
        result.regressions.add(value=number)
