"""The inspector's step of ``tfship demo``: what the best export looks like to a client."""

from __future__ import annotations

import pathlib
from collections.abc import Callable

from tfship._wire import DEFAULT_SIGNATURE
from tfship.inspect._check import check_saved_model
from tfship.inspect._reader import read_saved_model
from tfship.inspect._show import render_show
from tfship.inspect._versions import list_versions, render_versions


def run_demo_step(export_dir: pathlib.Path, echo: Callable[[str], None]) -> None:
    """Print the versions beside ``export_dir``, its serving signature (as ``saved_model_cli
    show`` would), the recovered ``tf.Example`` features and the readiness verdict.

    Example:
        >>> run_demo_step(pathlib.Path("export/best/1700000000"), print)  # doctest: +SKIP
    """
    export_dir = pathlib.Path(export_dir)
    base = export_dir.parent
    echo(f"$ tfship inspect versions {base}")
    echo(render_versions(list_versions(base)).rstrip("\n"))
    info = read_saved_model(export_dir)
    mg = info.meta_graph("serve")
    key = DEFAULT_SIGNATURE if DEFAULT_SIGNATURE in mg.signatures else next(iter(mg.signatures))
    echo(f"$ tfship inspect show {export_dir} --tag-set serve --signature {key}")
    echo(render_show(info, tag_set="serve", signature=key).rstrip("\n"))
    spec = mg.signature(key).feature_spec
    if spec:
        echo("tf.Example features it parses:")
        for name, entry in spec.items():
            if entry.required:
                default = "required"
            else:
                default = "optional" if entry.default is None else f"default {entry.default}"
            echo(f"  {name}: {entry.kind} {entry.dtype} {list(entry.shape)} ({default})")
    report = check_saved_model(export_dir)
    verdict = "ready to serve" if not report.errors else "NOT ready to serve"
    echo(f"$ tfship inspect check {export_dir}")
    echo(f"{verdict}: {len(report.errors)} errors, {len(report.warnings)} warnings, {report.content_hash}")
