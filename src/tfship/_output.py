"""How every command prints ``--json``: one format, so scripts and ``jq`` read them all alike.

Objects one key per line (indented by two), arrays of plain values on one line (a tensor stays
readable), arrays of objects one object per line; non-JSON values (paths, dates) as their text;
non-finite floats as ``NaN``/``Infinity``, as TF Serving's REST API writes them. ``tfship
serve --json`` is the one exception: it announces its ports as a single line, the first line a
launching script reads.
"""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["echo_json", "json_text"]


def json_text(value: Any, indent: str = "") -> str:
    """``value`` in tfship's JSON layout.

    Example:
        >>> print(json_text({"model": "m", "outputs": {"y": [[1.0, 2.0]]}}))
        {
          "model": "m",
          "outputs": {
            "y": [[1.0, 2.0]]
          }
        }
    """
    if isinstance(value, dict) and value:
        inner = indent + "  "
        items = [f"{inner}{json.dumps(str(k))}: {json_text(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, (list, tuple)) and value and any(isinstance(v, (dict, list)) for v in value):
        if all(isinstance(v, dict) for v in value) or any(_nested_object(v) for v in value):
            inner = indent + "  "
            items = [inner + json_text(v, inner) for v in value]
            return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return json.dumps(value, allow_nan=True, default=str)


def _nested_object(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, (list, tuple)) and any(_nested_object(v) for v in value)


def echo_json(value: Any) -> None:
    """Print ``value`` to stdout in tfship's JSON layout."""
    click.echo(json_text(value))
