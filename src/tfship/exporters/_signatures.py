"""Assemble SignatureDefs from a receiver and a head's export outputs, and report on them.

tf.estimator builds one SignatureDef per export output and quietly drops those that cannot be
served (a Classify/Regress signature needs exactly one string input). With a raw receiver that
drops ``serving_default`` too. Here the dropped ones are reported as data, and a missing
``serving_default`` is filled with the Predict signature of the default receiver.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tfship._tf import estimator, tf
from tfship._wire import DEFAULT_SIGNATURE, METHOD_KINDS, SignatureDef
from tfship.errors import ExportError

logger = logging.getLogger("tfship.exporters")


@dataclass(frozen=True)
class SignatureReport:
    """Which signatures an export wrote and which it excluded, with the reasons.

    Attributes:
        written: signature key -> ``{"method", "inputs", "outputs"}`` (and ``"from"`` when
            ``serving_default`` was filled from another output).
        excluded: signature key -> reason it could not be served.

    Example:
        >>> r = SignatureReport({"serving_default": {"method": "predict"}}, {"regression": "x"})
        >>> r.log_line()
        'signatures: wrote serving_default (predict); excluded regression (x)'
    """

    written: Mapping[str, Mapping[str, Any]]
    excluded: Mapping[str, str] = field(default_factory=dict)

    def log_line(self) -> str:
        """The one log line describing this report."""
        wrote = ", ".join(f"{k} ({v['method']})" for k, v in sorted(self.written.items()))
        line = f"signatures: wrote {wrote or 'nothing'}"
        if self.excluded:
            line += "; excluded " + ", ".join(
                f"{k} ({reason})" for k, reason in sorted(self.excluded.items())
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able copy."""
        return {
            "written": {k: dict(v) for k, v in self.written.items()},
            "excluded": dict(self.excluded),
        }


def build_signatures(
    receiver: Any, export_outputs: Mapping[str, Any]
) -> tuple[dict[str, SignatureDef], SignatureReport]:
    """Build the SignatureDef map for ``receiver`` (a ServingInputReceiver) and the outputs.

    Raises:
        ExportError: if no ``serving_default`` can be built.
    """
    defaults = _as_dict(receiver.receiver_tensors)
    groups: list[tuple[str, dict[str, Any]]] = [("", defaults)]
    for alt, tensors in (receiver.receiver_tensors_alternatives or {}).items():
        groups.append((f"{alt}:", _as_dict(tensors)))
    sigs: dict[str, Any] = {}
    excluded: dict[str, str] = {}
    for prefix, tensors in groups:
        for out_key, output in export_outputs.items():
            key = f"{prefix}{out_key}"
            try:
                sigs[key] = output.as_signature_def(tensors)
            except ValueError as exc:
                excluded[key] = _reason(exc, tensors)
    origin: dict[str, str] = {}
    if DEFAULT_SIGNATURE not in sigs:
        fallback = _predict_fallback(export_outputs, defaults)
        if fallback is None:
            raise ExportError(
                "export has no 'serving_default': the model's outputs "
                f"({', '.join(sorted(export_outputs))}) cannot be served from inputs "
                f"{', '.join(sorted(defaults))}; excluded: {excluded}"
            )
        source_key, sigs[DEFAULT_SIGNATURE] = fallback
        origin[DEFAULT_SIGNATURE] = source_key
        excluded.pop(DEFAULT_SIGNATURE, None)
    report = SignatureReport(
        written={k: _summary(v, origin.get(k)) for k, v in sigs.items()}, excluded=excluded
    )
    for prefix, tensors in groups:
        keys = [k for k in sigs if k.rpartition(":")[0] + (":" if ":" in k else "") == prefix]
        _warn_unservable_inputs(keys, tensors)
    return sigs, report


_warned: set[str] = set()


def _warn_unservable_inputs(keys: list[str], tensors: Mapping[str, Any]) -> None:
    # Once per process and message: a training run exports the same signatures many times.
    dense = tf().Tensor
    composite = {name: type(t).__name__ for name, t in tensors.items() if not isinstance(t, dense)}
    for name, kind in sorted(composite.items()):
        encoding = "ragged" if "Ragged" in kind else "sparse"
        message = (
            f"input {name!r} of signature(s) {', '.join(sorted(keys))} is {encoding} "
            "(variable-length): TF Serving's Predict API (REST and gRPC) cannot feed it; "
            "if it has one value per example, say so in the receiver's source "
            '(tf.io.FixedLenFeature([], dtype), tf.TensorSpec([None], dtype), or "shape": [] '
            "in a schema), else send its values in tf.Examples (receiver 'parsing' or 'both')"
        )
        if keys and message not in _warned:
            _warned.add(message)
            logger.warning("%s", message)


def _predict_fallback(outputs: Mapping[str, Any], tensors: dict[str, Any]) -> tuple[str, Any] | None:
    predict_cls = estimator().export.PredictOutput
    keys = sorted(outputs, key=lambda k: (k != "predict", k))
    for key in keys:
        if isinstance(outputs[key], predict_cls):
            return key, outputs[key].as_signature_def(tensors)
    # No Predict output: serve the union of all outputs' tensors as one Predict signature.
    merged: dict[str, Any] = {}
    for key in keys:
        for name, tensor in _output_tensors(outputs[key]).items():
            merged.setdefault(name, tensor)
    if not merged:
        return None
    return "+".join(keys), predict_cls(merged).as_signature_def(tensors)


def _output_tensors(output: Any) -> dict[str, Any]:
    # Classify/Regress outputs keep their tensors in fields, Predict outputs in a dict.
    if hasattr(output, "outputs"):
        return dict(output.outputs)
    names = {"scores": "scores", "classes": "classes", "value": "outputs"}
    return {
        key: getattr(output, attr) for attr, key in names.items() if getattr(output, attr, None) is not None
    }


def _as_dict(tensors: Any) -> dict[str, Any]:
    return dict(tensors) if isinstance(tensors, Mapping) else {"input": tensors}


def _reason(exc: ValueError, tensors: Mapping[str, Any]) -> str:
    # TF's messages run to several sentences and dump the tensors; the first sentence is the why.
    text = str(exc).strip().split(". ")[0].split("\n")[0].rstrip(".")
    return f"{text}; got {len(tensors)} input(s): {', '.join(sorted(tensors))}"


def _summary(sig: SignatureDef, origin: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "method": METHOD_KINDS.get(sig.method_name, sig.method_name),
        "inputs": sorted(sig.inputs),
        "outputs": sorted(sig.outputs),
    }
    if origin:
        out["from"] = origin
    return out
