"""The kinds of option the verbs declare again and again, each written once.

A verb lists its options in the order ``--help`` shows them; these only spare it the repeated
keywords: an option whose default ``--help`` shows (:func:`valued`), a path to a file or a
directory (:func:`file_option`, :func:`directory_option`), an on/off flag (:func:`flag`), and
several options applied as one decorator (:func:`options`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: A path that must not be a directory, and one that must not be a file (neither need exist).
FILE = click.Path(dir_okay=False, path_type=Path)
DIRECTORY = click.Path(file_okay=False, path_type=Path)


def valued(
    *decls: str, default: Any, type: Any = None, help: str | None = None, **extra: Any
) -> Callable[[F], F]:
    """An option with a default that ``--help`` shows."""
    return click.option(*decls, default=default, show_default=True, type=type, help=help, **extra)


def file_option(*decls: str, help: str, **extra: Any) -> Callable[[F], F]:
    """An option naming a file (not a directory), given as a ``Path``."""
    return click.option(*decls, type=FILE, help=help, **extra)


def directory_option(*decls: str, help: str, **extra: Any) -> Callable[[F], F]:
    """An option naming a directory (not a file), given as a ``Path``."""
    return click.option(*decls, type=DIRECTORY, help=help, **extra)


def flag(*decls: str, help: str) -> Callable[[F], F]:
    """An on/off flag, off unless given."""
    return click.option(*decls, is_flag=True, help=help)


def options(*decorators: Callable[[Any], Any]) -> Callable[[F], F]:
    """Several options as one decorator, listed in ``--help`` in the order given."""

    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply
