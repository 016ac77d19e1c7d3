"""``tfship promote``: check a candidate against the served version, then publish it.

Run as ``python -m tfship.cli.promote PID serve ...`` it is also the entry point of the
models promote serves: ``tfship serve`` that ends with promote. On Linux the kernel kills
such a process when the promote that started it dies, even by SIGKILL
(``PR_SET_PDEATHSIG``). The fallback on every system is a thread that sees the process's
parent is no longer ``PID`` (promote is gone: the process was re-parented) and ends it at
once. Nothing is lost: the server writes nothing, and its one client was promote. (SIGTERM
would wait until the models finish loading, seconds or minutes later.)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tfship._output import echo_json
from tfship.cli._options import DIRECTORY, directory_option, file_option, flag, options, valued

if TYPE_CHECKING:
    from tfship.promote import Check, Decision, Threshold

_EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_POSITIVE = click.FloatRange(min=0, min_open=True)
_THRESHOLD_FLAGS = {"value": "--threshold", "change": "--change"}


def _thresholds(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[Threshold, ...]:
    from tfship.promote import Threshold

    try:
        return tuple(Threshold.parse(v) for v in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _batches(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of batch sizes") from None
    if not sizes or any(size < 1 for size in sizes):
        raise click.BadParameter(f"{value!r}: batch sizes must be at least 1")
    return sizes


# The options, in groups, in the order --help lists them.
_WHERE = options(
    click.option(
        "--to",
        "base_path",
        type=click.Path(path_type=Path),
        help="The base path TF Serving watches; the candidate is published there.",
    ),
    click.option(
        "--rollback",
        "rollback_path",
        type=click.Path(path_type=Path),
        help="Republish the version before the newest of this base path as the newest.",
    ),
    directory_option(
        "--baseline", help="Compare with this SavedModel instead of the newest version of --to."
    ),
)
_REQUESTS = options(
    click.option(
        "--requests",
        type=_EXISTING_FILE,
        help="Requests to replay: records (.jsonl/.json/.csv) or a TFRecord of PredictionLog.",
    ),
    valued(
        "-n",
        "--count",
        default=100,
        type=click.IntRange(1),
        help="How many requests to replay: the first of --requests, else of --eval's rows, "
        "else the defaults' one request, repeated.",
    ),
    click.option("--signature", help="Signature the records are sent to (default serving_default)."),
)
_QUALITY = options(
    click.option(
        "--eval", "eval_file", type=_EXISTING_FILE, help="Labelled records both models are evaluated on."
    ),
    click.option("--label", help="The label field of --eval records (default: the export's schema)."),
    valued(
        "--min-agreement",
        default=0.99,
        type=click.FloatRange(0, 1),
        help="Least share of rows whose class both models agree on.",
    ),
    valued(
        "--max-diff",
        default=0.05,
        type=click.FloatRange(0),
        help="Largest absolute difference of a score allowed.",
    ),
    click.option(
        "--threshold",
        "thresholds",
        multiple=True,
        callback=_thresholds,
        help="A value threshold on the candidate, e.g. accuracy>=0.9 (repeatable).",
    ),
    click.option(
        "--change",
        "changes",
        multiple=True,
        callback=_thresholds,
        help="A change threshold against the baseline, e.g. accuracy>=-0.01 (repeatable).",
    ),
)
_SPEED = options(
    valued("--batch", "batches", default="1,32", callback=_batches, help="Batch sizes timed."),
    valued(
        "--latency-calls",
        default=60,
        type=click.IntRange(1),
        help="Timed calls per model and batch size.",
    ),
    valued(
        "--max-latency-ratio",
        default=1.25,
        type=_POSITIVE,
        help="Largest candidate/baseline ratio of median latency allowed.",
    ),
    valued(
        "--max-load-seconds",
        default=120.0,
        type=_POSITIVE,
        help="How long a model may take to load and replay its warmup.",
    ),
)
_OPS = options(
    click.option(
        "--target-tf",
        metavar="VERSION",
        help="Judge the candidate's ops against the TensorFlow of the server that will serve "
        "it (e.g. 2.15 or 2.21.0; default: the installed one, which the served checks run).",
    ),
    click.option(
        "--allow-op",
        "allow_ops",
        multiple=True,
        metavar="OP",
        help="Let the candidate use this op with side effects on the host (WriteFile, "
        "PyFunc, ...; repeatable); any other refuses it before it is loaded.",
    ),
)


@click.command("promote")
@click.argument("candidate", required=False, type=DIRECTORY)
@_WHERE
@_REQUESTS
@_QUALITY
@_SPEED
@_OPS
@flag("--dry-run", help="Decide, publish nothing.")
@file_option("--report", "report_path", help="Write the decision as one self-contained HTML page.")
@flag("--json", "as_json", help="Print the decision as one JSON line.")
def promote(
    candidate: Path | None,
    base_path: Path | None,
    rollback_path: Path | None,
    report_path: Path | None,
    as_json: bool,
    dry_run: bool,
    **options: Any,
) -> None:
    """Check CANDIDATE against the version served from --to, then publish it there.

    The checks, in order, all run even after a failure: ready (inspect check --run, its ops
    judged against --target-tf), compatible (inspect diff, as a client sees it), serves
    (loaded by tfship serve in its own process, warmup replayed, N requests answered), same
    answers (against the baseline), as good (--eval data or the exporters' metrics,
    --threshold and --change) and as fast (p50/p99 at --batch, interleaved). A candidate that
    uses ops with side effects on the host (file writes, PyFunc, ...) is never loaded unless
    --allow-op names them. When every check passes the candidate is copied into the base
    path, fsynced and renamed to the next version, with a decision record beside it; the last
    line says which version was published. A --report that cannot be written then is a
    warning: the exit code stays that of the decision.
    Exit codes: 0 promoted (or would be), 3 refused, 2 bad input, 1 failed to run (nothing
    was published).

    \b
    Example:
      tfship promote model/export/latest/1700000300 --to serving/penguins
      tfship promote --rollback serving/penguins
    """
    from tfship.promote import MetricNotMeasuredError, PromoteOptions, PromotionRefusedError
    from tfship.promote import promote as run_promote
    from tfship.promote import rollback as run_rollback

    if rollback_path is not None:
        if candidate is not None or base_path is not None:
            raise click.UsageError("--rollback BASE_PATH takes no CANDIDATE and no --to")
        decision = run_rollback(rollback_path, dry_run=dry_run)
    else:
        if candidate is None or base_path is None:
            raise click.UsageError("give CANDIDATE and --to BASE_PATH (or --rollback BASE_PATH)")
        if report_path is not None:
            _check_report_path(report_path)
        opts = PromoteOptions(
            baseline=options["baseline"],
            requests=options["requests"],
            count=options["count"],
            signature=options["signature"],
            eval_file=options["eval_file"],
            label=options["label"],
            min_agreement=options["min_agreement"],
            max_diff=options["max_diff"],
            thresholds=options["thresholds"],
            changes=options["changes"],
            batches=options["batches"],
            latency_calls=options["latency_calls"],
            max_latency_ratio=options["max_latency_ratio"],
            max_load_seconds=options["max_load_seconds"],
            dry_run=dry_run,
            target_tf=options["target_tf"],
            allow_ops=options["allow_ops"],
        )
        on_check = None if as_json else _print_check
        try:
            decision = run_promote(candidate, base_path, opts, on_check=on_check)
        except MetricNotMeasuredError as exc:
            raise MetricNotMeasuredError(f"{_THRESHOLD_FLAGS[exc.kind]} {exc}", kind=exc.kind) from None
        if report_path is not None:
            _write_report(decision, report_path)
    if as_json:
        echo_json(decision.to_dict())
        if not decision.promoted:
            raise PromotionRefusedError(decision.verdict_line())
        return
    for check in decision.checks if decision.action == "rollback" else []:
        _print_check(check)
    for note in decision.notes:
        click.echo(f"note: {note}")
    if decision.promoted:
        click.echo(decision.verdict_line())
    if not decision.promoted:
        raise PromotionRefusedError(decision.verdict_line())


def _check_report_path(path: Path) -> None:
    """Refuse, before anything runs, a --report that could not be written after publishing."""
    import os

    if not path.parent.is_dir():
        raise click.BadParameter(f"{path.parent}: no such directory", param_hint="--report")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{path.parent}: not writable", param_hint="--report")


def _write_report(decision: Decision, path: Path) -> None:
    """The report, or a warning: the decision (and any version published) stands either way."""
    from tfship.promote import write_report
    from tfship.promote._publish import io_failure

    try:
        write_report(decision, path)
    except OSError as exc:
        done = (
            "the decision stands"
            if not decision.promoted or decision.version is None
            else (f"version {decision.version} was published all the same")
        )
        click.echo(f"warning: --report {io_failure(exc)}; {done}", err=True)


def _print_check(check: Check) -> None:
    click.echo(check.line())
    for note in check.notes:
        click.echo(f"{'':14}note: {note}")


_PARENT_POLL_SECONDS = 0.2


def _end_with(parent: int) -> None:
    import os
    import time

    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(1)


if __name__ == "__main__":
    import sys
    import threading

    from tfship.cli import main

    threading.Thread(target=_end_with, args=(int(sys.argv.pop(1)),), daemon=True).start()
    main()
