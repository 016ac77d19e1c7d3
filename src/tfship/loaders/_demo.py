"""The loaders' step of ``tfship demo``: batch-predict the eval set as ``tfship predict`` does."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from tfship.loaders._job import JobSpec, run_job
from tfship.loaders._model import load
from tfship.loaders._readers import columns_of


def run_demo_step(
    export_dir: Path, eval_csv: Path, workdir: Path, echo: Callable[[str], None]
) -> None:
    """Predict ``eval_csv`` with the export into ``workdir/predictions.csv``; echo the summary.

    Uses the ``predict`` signature when there is one (class and probabilities per row) and
    copies the columns the model does not read (the label) next to the predictions, so the
    echo can say how often the predicted class matches it.

    Example:
        >>> run_demo_step(Path("export/best"), Path("eval.csv"), Path("work"), print)
        ... # doctest: +SKIP
        $ tfship predict export/best -i eval.csv -o work/predictions.csv -s predict ...
        rows in: 68, predicted: 68, rejected: 0 (...)
    """
    output = workdir / "predictions.csv"
    rejects = workdir / "predictions.rejects.jsonl"
    with load(export_dir) as model:
        signature = "predict" if "predict" in model.signatures else model.default_signature
        adapter = model.adapter(signature)
        outputs = [k for k in ("classes", "probabilities") if k in adapter.sig.outputs] or None
        keep = [c for c in columns_of(eval_csv) or [] if c not in adapter.fields]
        command = f"$ tfship predict {export_dir} -i {eval_csv} -o {output} -s {signature}"
        if outputs:
            command += f" --outputs {','.join(outputs)}"
        if keep:
            command += f" --keep-columns {','.join(keep)}"
        echo(f"{command} --rejects {rejects}")
        spec = JobSpec(
            inputs=[str(eval_csv)],
            output=output,
            signature=signature,
            outputs=outputs,
            keep_columns=keep,
            rejects=rejects,
        )
        summary = run_job(model, spec, progress=False)
    echo(summary.line())
    _echo_agreement(output, keep, echo)


def _echo_agreement(output: Path, keep: list[str], echo: Callable[[str], None]) -> None:
    """Show a few rows and, with one kept label column, how often ``classes`` matches it."""
    with open(output, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows[:3]:
        echo("   " + ", ".join(f"{k}={_short(v)}" for k, v in row.items()))
    if len(keep) == 1 and rows and "classes" in rows[0]:
        # Only a label-like column (a few distinct values, some matching) is worth comparing.
        same = sum(row[keep[0]] == row["classes"] for row in rows)
        if same and len({row[keep[0]] for row in rows}) <= 20:
            echo(f"   predicted class = {keep[0]} on {same} of {len(rows)} rows")


def _short(value: str) -> str:
    try:
        return f"{float(value):.3f}"
    except ValueError:
        return value
