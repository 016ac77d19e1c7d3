"""The demo's last step: call the served export with ``ServingClient`` and print the answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tfship._wire import CLASSIFY_METHOD

__all__ = ["run_demo_step"]



def run_demo_step(
    target: str,
    model_name: str,
    records: list[dict[str, Any]],
    echo: Callable[[str], None],
    *,
    schema: Any = None,
    timeout: float = 60.0,
) -> None:
    """Wait for ``model_name`` at ``target``, send it ``records`` and print what it answers.

    A classification ``serving_default`` (what a canned Estimator exports) is called with
    ``classify``; a Predict signature with ``predict`` (serialized Examples for a parsing
    signature, columns of the records otherwise).

    Args:
        target: gRPC address of the server (``127.0.0.1:8500``).
        model_name: the served model's name.
        records: feature dicts (CSV rows); typed as the model parses them unless ``schema``.
        echo: where lines go (``click.echo``).
        schema: a ``tfship.schema.Schema`` or a path to its JSON, to convert the records.
        timeout: seconds to wait for the model to become available.

    Example:
        >>> run_demo_step("127.0.0.1:8500", "penguins", rows, click.echo,
        ...               schema="schema.json")  # doctest: +SKIP
    """
    from tfship.serve_client import ServingClient

    schema = _load_schema(schema)
    with ServingClient(target, timeout=30.0) as client:
        ready = client.wait_until_available(model_name, timeout=timeout)
        meta = client.metadata(model_name)
        sig = meta.signature()
        echo(f"$ tfship client status --server {target} --model {model_name}")
        echo(f"   version {ready.version} {ready.state}; serving_default is {sig.method_name}")
        call = _DemoCall(client, model_name, records, schema, echo, target)
        if sig.method_name == CLASSIFY_METHOD:
            _classify(call)
        else:
            _predict(call, sig)


@dataclass(frozen=True)
class _DemoCall:
    """What both demo calls need: the client, the model, the records and where lines go."""

    client: Any
    model: str
    records: Sequence[Mapping[str, Any]]
    schema: Any
    echo: Callable[[str], None]
    target: str

    def announce(self, verb: str) -> None:
        """Print the CLI command that does the same call."""
        self.echo(f"$ tfship client {verb} --server {self.target} --model {self.model} -i records.jsonl")

    def answered_by(self, result: Any) -> None:
        self.echo(f"   answered by version {result.model_spec.version}")


def _load_schema(schema: Any) -> Any:
    if schema is None or not isinstance(schema, (str, Path)):
        return schema
    from tfship.schema import Schema

    return Schema.load(schema)


def _classify(call: _DemoCall) -> None:
    call.announce("classify")
    result = call.client.classify(call.model, call.records, schema=call.schema)
    call.answered_by(result)
    for number, row in enumerate(result.classes, 1):
        label, score = max(row, key=lambda pair: pair[1])
        known = _label_of(call.records[number - 1], call.schema)
        truth = f"  (record says {known})" if known is not None else ""
        call.echo(f"   record {number}: {label} {score:.3f}{truth}")


def _predict(call: _DemoCall, sig: Any) -> None:
    call.announce("predict")
    result = call.client.predict(call.model, _predict_inputs(sig, call.records, call.schema))
    call.answered_by(result)
    for key, value in result.outputs.items():
        shown = np.array2string(value, precision=3, threshold=20, separator=", ")
        call.echo(f"   {key}: " + " ".join(shown.split()))


def _predict_inputs(sig: Any, records: Sequence[Mapping[str, Any]], schema: Any) -> dict[str, Any]:
    """Serialized Examples for a parsing signature (one string input), columns otherwise."""
    from tfship.serve_client._calls import to_example

    string_inputs = [k for k, info in sig.inputs.items() if info.dtype == "string"]
    if len(sig.inputs) == 1 and string_inputs:
        serialized = [
            to_example(r, schema, f"record {i}").SerializeToString() for i, r in enumerate(records, 1)
        ]
        return {string_inputs[0]: serialized}
    return {key: [record[key] for record in records] for key in sig.inputs}


def _label_of(record: Mapping[str, Any], schema: Any) -> Any:
    if schema is None:
        return None
    return record.get(schema.label.name)
