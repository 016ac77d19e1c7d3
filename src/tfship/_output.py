"""How every command prints ``--json``: one format, so scripts and ``jq`` read them all alike.

One JSON document on one line (JSON Lines): a script can take the last line of a command
that also logs, ``tfship serve --json`` announces its ports the same way, and ``jq`` pretty
prints it for a person. Non-JSON values (paths, dates) are written as their text, non-finite
floats as ``NaN``/``Infinity``, as TF Serving's REST API writes them.
"""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["echo_json", "json_text"]


def json_text(value: Any) -> str:
    """``value`` as tfship prints it with ``--json``.

    One line, NaN kept; a JSON value inside TF Serving's error texts is
    ``tfship._wire.error_json_text`` instead.

    Example:
        >>> json_text({"model": "m", "outputs": {"y": [[1.0, float("nan")]]}})
        '{"model": "m", "outputs": {"y": [[1.0, NaN]]}}'
    """
    return json.dumps(value, allow_nan=True, default=str)


def echo_json(value: Any) -> None:
    """Print ``value`` to stdout in tfship's JSON layout."""
    click.echo(json_text(value))
