"""``tfship inspect``: look inside SavedModels without loading them.

Verbs: ``show`` (saved_model_cli's ``show``, byte for byte, or ``--json``), ``versions``,
``diff``, ``check``, ``scan`` and ``request``. Errors are one line; exit codes: 0 fine, 2 bad
input (missing path, no SavedModel, unknown tag-set or signature), 3 a negative verdict
(``diff`` found a breaking change, ``check`` found an error, ``scan`` found a denylisted op).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def _path_argument(path: str | None, dir_: str | None) -> str:
    chosen = path or dir_
    if not chosen:
        raise click.UsageError("give the SavedModel directory as PATH (or --dir)")
    if path and dir_ and path != dir_:
        raise click.UsageError(f"PATH {path!r} and --dir {dir_!r} disagree; give one")
    return chosen


@click.group("inspect", context_settings=_CONTEXT)
def inspect() -> None:
    """Look inside SavedModels from their protos: nothing is loaded or run."""


@inspect.command("show", context_settings=_CONTEXT)
@click.argument("path", required=False)
@click.option("--dir", "dir_", metavar="PATH", help="The SavedModel directory (like PATH).")
@click.option(
    "--tag-set",
    "--tag_set",
    "tag_set",
    metavar="TAGS",
    help="Comma-separated tags of one MetaGraph, e.g. 'serve'; '' is the empty set.",
)
@click.option(
    "--signature",
    "--signature-def",
    "--signature_def",
    "signature",
    metavar="KEY",
    help="Show the inputs and outputs of this signature (needs --tag-set).",
)
@click.option("--all", "all_", is_flag=True, help="Show every MetaGraph, signature and function.")
@click.option(
    "--list-ops",
    "--list_ops",
    "list_ops",
    is_flag=True,
    help="List the ops of the MetaGraph (needs --tag-set or --all).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the schema-versioned JSON description instead.")
def show(
    path: str | None,
    dir_: str | None,
    tag_set: str | None,
    signature: str | None,
    all_: bool,
    list_ops: bool,
    as_json: bool,
) -> None:
    """Show a SavedModel's tag-sets, signatures, ops and functions.

    The text is the same as `saved_model_cli show` of TensorFlow 2.15.1 for the same options,
    except that the ops are sorted. Example:

        tfship inspect show export/best/1700000000 --all
    """
    from tfship.inspect._reader import read_saved_model

    info = read_saved_model(_path_argument(path, dir_))
    if as_json:
        _emit_json(_filtered_description(info, tag_set, signature))
        return
    from tfship.inspect._show import render_show

    text = render_show(info, tag_set=tag_set, signature=signature, all=all_, list_ops=list_ops)
    # Written as is: the Concrete Functions section may end without a newline, as the original.
    sys.stdout.write(text)
    sys.stdout.flush()


def _filtered_description(info: Any, tag_set: str | None, signature: str | None) -> Any:
    from tfship.inspect._describe import describe, meta_graph_dict

    doc = describe(info)
    if tag_set is not None:
        mg = info.meta_graph(tag_set)
        mg_doc = meta_graph_dict(mg)
        if signature is not None:
            mg.signature(signature)
            mg_doc["signatures"] = {signature: mg_doc["signatures"][signature]}
        doc["meta_graphs"] = [mg_doc]
    return doc
