"""The loaders' step of ``tfship demo``: batch-predict the eval set as ``tfship predict`` does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tfship.loaders._job import JobSpec, run_job
from tfship.loaders._model import load


def run_demo_step(
    export_dir: Path, eval_csv: Path, workdir: Path, echo: Callable[[str], None]
) -> None:
    """Predict ``eval_csv`` with the export into ``workdir/predictions.csv``; echo the summary.

    Example:
        >>> run_demo_step(Path("export/dnn"), Path("eval.csv"), Path("work"), print)
        ... # doctest: +SKIP
        $ tfship predict export/dnn -i eval.csv -o work/predictions.csv --rejects ...
        rows in: 69, predicted: 69, rejected: 0 (...)
    """
    output = workdir / "predictions.csv"
    rejects = workdir / "predictions.rejects.jsonl"
    echo(f"$ tfship predict {export_dir} -i {eval_csv} -o {output} --rejects {rejects}")
    with load(export_dir) as model:
        spec = JobSpec(inputs=[str(eval_csv)], output=output, rejects=rejects)
        summary = run_job(model, spec, progress=False)
    echo(summary.line())
