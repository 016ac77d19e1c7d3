"""``tfship inspect``: look inside SavedModels without loading them.

Verbs: ``show`` (saved_model_cli's ``show``, byte for byte, or ``--json``), ``versions``,
``diff``, ``check``, ``scan`` and ``request``. Errors are one line; exit codes: 0 fine, 2 bad
input (missing path, no SavedModel, unknown tag-set or signature), 3 a negative verdict
(``diff`` found a breaking change, ``check`` found an error, ``scan`` found a denylisted op).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tfship._output import echo_json
from tfship.cli._options import flag, valued

if TYPE_CHECKING:
    from tfship.inspect import SavedModelInfo
    from tfship.inspect._check import CheckReport

_F = TypeVar("_F", bound=Callable[..., Any])
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _emit_json(data: Any) -> None:
    echo_json(data)


def _path_or_dir(command: _F) -> _F:
    """The optional PATH argument and its ``--dir`` spelling; ``_path_argument`` picks one."""
    command = click.option("--dir", "dir_", metavar="PATH", help="The SavedModel directory (like PATH).")(
        command
    )
    return click.argument("path", required=False)(command)


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
@_path_or_dir
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
    "signature",
    metavar="KEY",
    help="Show the inputs and outputs of this signature (of the only tag-set, or of --tag-set).",
)
@click.option(
    "--signature_def",
    "signature_def",
    metavar="KEY",
    help="saved_model_cli's spelling of --signature: as there, it needs --tag_set.",
)
@flag("--all", "all_", help="Show every MetaGraph, signature and function.")
@flag(
    "--list-ops",
    "--list_ops",
    "list_ops",
    help="List the ops of the MetaGraph (needs --tag-set or --all).",
)
@flag("--json", "as_json", help="Print the schema-versioned JSON description instead.")
def show(
    path: str | None,
    dir_: str | None,
    tag_set: str | None,
    signature: str | None,
    signature_def: str | None,
    all_: bool,
    list_ops: bool,
    as_json: bool,
) -> None:
    """Show a SavedModel's tag-sets, signatures, ops and functions.

    The text is the same as `saved_model_cli show` of TensorFlow 2.15.1 for the same options,
    except that the ops are sorted. PATH is a version directory, or a base path: then the
    version TF Serving would serve from it (the newest) is shown, named on stderr. Example:

        tfship inspect show export/best/1700000000 --all
    """
    from tfship.inspect._reader import read_saved_model

    if signature is not None and signature_def is not None and signature != signature_def:
        raise click.UsageError(f"--signature {signature!r} and --signature_def {signature_def!r} disagree")
    info = read_saved_model(_served_version(_path_argument(path, dir_), "showing"))
    if as_json or signature is not None:
        signature = signature or signature_def
        if signature is not None and tag_set is None and not all_:
            tag_set = _only_tag_set(info)
    else:
        signature = signature_def
    if as_json:
        _emit_json(_filtered_description(info, tag_set, signature))
        return
    from tfship.inspect._show import render_show

    if signature is not None and tag_set is None and not all_:
        # saved_model_cli ignores the key here; stdout stays identical, the hint goes to stderr.
        click.echo(
            "note: --signature_def needs --tag_set, as in saved_model_cli "
            "(--signature picks the only tag-set)",
            err=True,
        )
    text = render_show(info, tag_set=tag_set, signature=signature, all=all_, list_ops=list_ops)
    # Written as is: the Concrete Functions section may end without a newline, as the original.
    sys.stdout.write(text)
    sys.stdout.flush()


def _only_tag_set(info: SavedModelInfo) -> str:
    """The tag-set of a SavedModel's only MetaGraph, said on stderr; refused when there are more."""
    from tfship.errors import InputError
    from tfship.inspect._reader import format_tags

    if len(info.tag_sets) != 1:
        listed = "; ".join(format_tags(t) for t in info.tag_sets)
        raise InputError(
            f"--signature needs --tag-set: {info.path} has {len(info.tag_sets)} tag-sets: {listed}"
        )
    tags = info.tag_sets[0]
    click.echo(f"using tag-set {format_tags(tags)}, the only one", err=True)
    return ",".join(tags)


def _filtered_description(info: SavedModelInfo, tag_set: str | None, signature: str | None) -> dict[str, Any]:
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


@inspect.command("versions", context_settings=_CONTEXT)
@click.argument("base_path")
@flag("--json", "as_json", help="Print JSON instead of a table.")
def versions(base_path: str, as_json: bool) -> None:
    """List the numeric versions under a model base path and the one TF Serving would serve.

    Example:

        tfship inspect versions export/best
    """
    from tfship.inspect._versions import list_versions, render_versions

    report = list_versions(base_path)
    if as_json:
        _emit_json(report.to_dict())
    else:
        click.echo(render_versions(report), nl=False)


@inspect.command("diff", context_settings=_CONTEXT)
@click.argument("a")
@click.argument("b")
@flag("--json", "as_json", help="Print JSON instead of text.")
def diff(a: str, b: str, as_json: bool) -> None:
    """Compare two exports (A old, B new); exit 3 when a change breaks existing clients.

    A and B are version directories, or base paths: then the version TF Serving would serve
    from each (the newest) is compared, named on stderr.

    Example:

        tfship inspect diff export/best/1700000001 export/best/1700000123
    """
    from tfship.inspect._diff import BreakingChangeError, diff_saved_models, render_diff
    from tfship.inspect._reader import read_saved_model

    a, b = _served_version(a, "comparing"), _served_version(b, "comparing")
    report = diff_saved_models(read_saved_model(a), read_saved_model(b))
    if as_json:
        _emit_json(report.to_dict())
    else:
        click.echo(render_diff(report), nl=False)
    if report.breaking:
        first = report.breaking[0]
        raise BreakingChangeError(
            f"{len(report.breaking)} breaking change(s) from {a} to {b}, first: {first.where}: {first.detail}"
        )


@inspect.command("check", context_settings=_CONTEXT)
@click.argument("path")
@valued(
    "--tag-set",
    "--tag_set",
    "tag_set",
    default="serve",
    help="The tag-set TF Serving will load.",
)
@click.option(
    "--denylist",
    default=None,
    metavar="OPS",
    help="Comma-separated denylisted ops (default: ReadFile,WriteFile,PrintV2).",
)
@flag("--strict", help="Fail (exit 3) on warnings too.")
@flag(
    "--run",
    help="Also load the export as TF Serving does and run one request per signature.",
)
@click.option(
    "--allow-op",
    "allowed_ops",
    multiple=True,
    metavar="OP",
    help="Let --run load an export that uses this op with side effects on the host (WriteFile, "
    "PyFunc, ...; repeatable); it is no longer denylisted either.",
)
@click.option(
    "--target-tf",
    metavar="VERSION",
    default=None,
    help="Judge the ops against this TensorFlow, the one that will serve the export (e.g. 2.15 "
    "or 2.21.0; default: the installed one, else the newest tfship has a table for).",
)
@flag("--json", "as_json", help="Print JSON instead of text.")
def check(
    path: str,
    tag_set: str,
    denylist: str | None,
    strict: bool,
    run: bool,
    allowed_ops: tuple[str, ...],
    target_tf: str | None,
    as_json: bool,
) -> None:
    """Check an export for serving readiness; exit 3 when it is not ready.

    PATH is a version directory, or a base path: then the version TF Serving would serve
    from it (the newest) is checked. The checks read the protos only and need no TensorFlow;
    its ops are judged against the TensorFlow named by --target-tf (the output says which).
    --run loads the model in a TF1 session (as TF Serving does) and runs a request built from
    each signature's defaults, on the TensorFlow installed here; not an export that uses ops
    with side effects on the host (file writes, PyFunc, ...) unless --allow-op names them.

    Example:

        tfship inspect check export/best/1700000123 --target-tf 2.15 --run
    """
    from tfship.inspect._check import CheckFailedError, check_saved_model, render_check
    from tfship.inspect._scan import parse_denylist

    if run:  # before any check: the one part of check that needs TensorFlow
        from tfship._tf import require_tensorflow

        require_tensorflow("--run (it loads the model)")
    path = _served_version(path, "checking")
    denied = parse_denylist(denylist) - frozenset(allowed_ops)
    report = check_saved_model(path, tags=tag_set, denylist=denied, target_tf=target_tf)
    if run:
        _run_signatures(report, path, allowed_ops)
    if as_json:
        _emit_json(report.to_dict())
    else:
        click.echo(render_check(report), nl=False)
    failing = report.errors + (report.warnings if strict else [])
    if failing:
        raise CheckFailedError(
            f"{path} is not ready to serve: {len(failing)} finding(s), first: "
            f"{failing[0].check}: {failing[0].message}"
        )


def _run_signatures(report: CheckReport, path: str, allowed_ops: tuple[str, ...]) -> None:
    """``check --run``: one request per signature, unless loading would reach the host first."""
    from tfship.inspect._reader import read_saved_model
    from tfship.inspect._scan import host_effects, host_effects_refusal

    # every MetaGraph: whichever one is loaded, nothing of the export runs before this
    graphs = read_saved_model(path).meta_graphs
    refused = sorted({op for mg in graphs for op in host_effects(mg, allowed_ops)})
    if refused:
        report.add("run", "error", f"not run: {host_effects_refusal(refused)}")
        return
    from tfship.exporters import check_runs

    for key, cause in check_runs(path).items():
        if cause is None:
            report.add("run", "ok", f"signature {key} answered a request built from its defaults")
        else:
            report.add("run", "error", f"signature {key} cannot answer a request: {cause}")


def _served_version(path: str, doing: str) -> str:
    """A base path (TF Serving's ``--model_base_path``) becomes the version it would serve.

    The choice is said on stderr (``<doing> version N of PATH: ...``), so stdout stays the
    command's own output.
    """
    from tfship._wire import version_dirs

    base = Path(path)
    if any((base / name).exists() for name in ("saved_model.pb", "saved_model.pbtxt")):
        return path
    versions = version_dirs(base)
    if not versions:
        return path
    number, newest = versions[-1]
    click.echo(f"{doing} version {number} of {path}: the one TF Serving would serve", err=True)
    return str(newest)


@inspect.command("scan", context_settings=_CONTEXT)
@_path_or_dir
@click.option(
    "--tag-set",
    "--tag_set",
    "tag_set",
    default=None,
    help="Scan only this tag-set (default: every MetaGraph).",
)
@click.option(
    "--denylist",
    "--op_denylist",
    "denylist",
    default=None,
    metavar="OPS",
    help="Comma-separated ops (default: ReadFile,WriteFile,PrintV2; '' for none).",
)
@flag("--json", "as_json", help="Print JSON instead of text.")
def scan(
    path: str | None, dir_: str | None, tag_set: str | None, denylist: str | None, as_json: bool
) -> None:
    """Scan every op of the graph and its functions for denylisted ops; exit 3 if found.

    Example:

        tfship inspect scan export/best/1700000123 --denylist ReadFile,WriteFile,PyFunc
    """
    from tfship.inspect._reader import read_saved_model
    from tfship.inspect._scan import DenylistedOpError, parse_denylist, render_scan, scan_saved_model

    chosen = _served_version(_path_argument(path, dir_), "scanning")
    ops = parse_denylist(denylist)
    results = scan_saved_model(read_saved_model(chosen), ops, tags=tag_set)
    if as_json:
        _emit_json(
            {
                "schema": "tfship.inspect.scan",
                "version": 1,
                "denylist": sorted(ops),
                "meta_graphs": [{"tags": list(mg.tags), "found": sorted(found)} for mg, found in results],
            }
        )
    else:
        click.echo(render_scan(results, ops), nl=False)
    found = sorted({op for _, f in results for op in f})
    if found:
        raise DenylistedOpError(f"{chosen} uses denylisted ops: {', '.join(found)}")


@inspect.command("request", context_settings=_CONTEXT)
@click.argument("path")
@click.option(
    "--signature",
    "--signature-def",
    "--signature_def",
    "signature",
    default=None,
    metavar="KEY",
    help="Signature key (default: serving_default).",
)
@valued("--tag-set", "--tag_set", "tag_set", default="serve")
@valued(
    "--format",
    "fmt",
    type=click.Choice(["rest", "grpc", "warmup", "curl", "python"]),
    default="rest",
    help="REST JSON body, gRPC request (text proto), warmup file, a curl command line, or a "
    "Python snippet using tfship.serve_client.ServingClient.",
)
@click.option(
    "--server",
    default=None,
    metavar="ADDRESS",
    help="Where curl and python send the request: a REST URL or a gRPC host:port "
    "(default: http://localhost:8501 for curl, localhost:8500 for python).",
)
@valued(
    "--batch",
    type=click.IntRange(min=1, max=1000),
    default=1,
    help="Rows (examples) in the request.",
)
@click.option(
    "--model-name",
    default=None,
    help="Served model name, as TF Serving's --model_name (default: the base directory's name).",
)
@click.option(
    "--value",
    "value_items",
    multiple=True,
    metavar="NAME=JSON",
    help="Use this value for a feature (or raw input), e.g. --value age=33 --value 'color=\"red\"'.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write here (binary for grpc); required for warmup.",
)
def request(
    path: str,
    signature: str | None,
    tag_set: str,
    fmt: str,
    server: str | None,
    batch: int,
    model_name: str | None,
    value_items: tuple[str, ...],
    output: str | None,
) -> None:
    """Build a ready-to-send example request for a signature.

    Examples:

        tfship inspect request export/best/1700000123 --format rest

        tfship inspect request export/best --model-name penguins --format curl

        tfship inspect request export/best/1700000123 --format warmup \\
            -o export/best/1700000123/assets.extra/tf_serving_warmup_requests
    """
    from tfship.errors import InputError
    from tfship.inspect._reader import read_saved_model
    from tfship.inspect._request import example_request, write_warmup

    if model_name is not None and not model_name.strip():
        raise InputError("--model-name is empty: give the name the server serves the model under")
    if server is not None and fmt not in ("curl", "python"):
        raise InputError(f"--server is used by --format curl and python only, not --format {fmt}")
    req = example_request(
        read_saved_model(_served_version(path, "using")),
        signature=signature,
        tags=tag_set,
        batch=batch,
        model_name=model_name,
        values=_parse_values(value_items),
    )
    if fmt == "warmup":
        if output is None:
            raise InputError("--format warmup writes a binary TFRecord file: give --output FILE")
        count = write_warmup(output, [req])
        click.echo(f"wrote {count} warmup record(s) ({req.verb}) to {output}", err=True)
        return
    text, data = _request_text(req, fmt, server)
    if output is None:
        click.echo(text, nl=False)
    else:
        with open(output, "wb") as stream:
            stream.write(data)
        click.echo(f"wrote {output}", err=True)


def _request_text(req: Any, fmt: str, server: str | None) -> tuple[str, bytes]:
    """The request in a text format, and the bytes ``--output`` writes (binary for grpc)."""
    if fmt == "curl":
        text = req.curl(server or "http://localhost:8501") + "\n"
        return text, text.encode()
    if fmt == "python":
        text = req.python(server or "localhost:8500")
        return text, text.encode()
    if fmt == "rest":
        click.echo(f"# POST {req.url_path}", err=True)
        text = json.dumps(req.rest, indent=2) + "\n"
        return text, text.encode()
    from google.protobuf import text_format

    click.echo(f"# {type(req.grpc).__name__}", err=True)
    return text_format.MessageToString(req.grpc), req.grpc.SerializeToString()


def _parse_values(items: tuple[str, ...]) -> dict[str, Any]:
    from tfship.errors import InputError

    values: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise InputError(f"--value {item!r}: expected NAME=JSON, e.g. age=33 or color='\"red\"'")
        try:
            values[name] = json.loads(text)
        except ValueError:
            values[name] = text  # a bare word is a string: --value color=red
    return values
