"""The demo's last step: call the served export with ``ServingClient`` and print the answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["run_demo_step"]

CLASSIFY_METHOD = "tensorflow/serving/classify"


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
    from tfship.serve_client._client import ServingClient

    schema = _load_schema(schema)
    with ServingClient(target, timeout=30.0) as client:
        ready = client.wait_until_available(model_name, timeout=timeout)
        meta = client.metadata(model_name)
        sig = meta.signature()
        echo(f"$ tfship client status --server {target} --model {model_name}")
        echo(f"   version {ready.version} {ready.state}; serving_default is {sig.method_name}")
        if sig.method_name == CLASSIFY_METHOD:
            _classify(client, model_name, records, schema, echo, target)
        else:
            _predict(client, model_name, sig, records, schema, echo, target)


def _load_schema(schema: Any) -> Any:
    if schema is None or not isinstance(schema, (str, Path)):
        return schema
    from tfship.schema import Schema

    return Schema.load(schema)


def _classify(
    client: Any,
    model: str,
    records: Sequence[Mapping[str, Any]],
    schema: Any,
    echo: Callable[[str], None],
    target: str,
) -> None:
    echo(f"$ tfship client classify --server {target} --model {model} -i records.jsonl")
    result = client.classify(model, records, schema=schema)
    echo(f"   answered by version {result.model_spec.version}")
    for number, row in enumerate(result.classes, 1):
        label, score = max(row, key=lambda pair: pair[1])
        known = _label_of(records[number - 1], schema)
        truth = f"  (record says {known})" if known is not None else ""
        echo(f"   record {number}: {label} {score:.3f}{truth}")


def _predict(
    client: Any,
    model: str,
    sig: Any,
    records: Sequence[Mapping[str, Any]],
    schema: Any,
    echo: Callable[[str], None],
    target: str,
) -> None:
    from tfship.serve_client._calls import to_example

    echo(f"$ tfship client predict --server {target} --model {model} -i records.jsonl")
    string_inputs = [k for k, info in sig.inputs.items() if info.dtype == "string"]
    if len(sig.inputs) == 1 and string_inputs:
        serialized = [
            to_example(r, schema, f"record {i}").SerializeToString() for i, r in enumerate(records, 1)
        ]
        inputs: Any = {string_inputs[0]: serialized}
    else:
        inputs = {key: [record[key] for record in records] for key in sig.inputs}
    result = client.predict(model, inputs)
    echo(f"   answered by version {result.model_spec.version}")
    for key, value in result.outputs.items():
        shown = np.array2string(value, precision=3, threshold=20, separator=", ")
        echo(f"   {key}: " + " ".join(shown.split()))


def _label_of(record: Mapping[str, Any], schema: Any) -> Any:
    if schema is None:
        return None
    return record.get(schema.label.name)
