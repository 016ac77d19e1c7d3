"""A promotion's decision as one self-contained HTML page: the checks, and plots side by side.

The plots are drawn by matplotlib as inline SVG: the page loads nothing from anywhere.
"""

from __future__ import annotations

import html
import io
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from tfship._files import write_atomically
from tfship.promote._promote import Decision

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } .verdict { font-size: 1.2em; font-weight: bold; }
.pass { color: #1a7f37; } .fail { color: #c62828; } .skip { color: #777; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 0.35em 0.7em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } .notes { color: #555; font-size: 0.9em; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
.plot { border: 1px solid #ddd; padding: 0.5em; } .plot svg { width: 340px; height: auto; }
"""


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    # no metadata block: the page carries the time once, and nothing names other documents
    empty = {"Creator": None, "Date": None, "Format": None, "Type": None}
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata=empty)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prologue and doctype: it is inline


def _latency_plot(plt: ModuleType, latencies: dict[int, dict[str, list[float]]]) -> Figure:
    sizes = sorted(latencies)
    figure: Figure  # what pyplot.subplots makes; the module, passed in, is untyped
    figure, axes = plt.subplots(figsize=(4.4, 3.6))
    data, labels, positions = [], [], []
    for index, size in enumerate(sizes):
        for offset, model in ((-0.18, "baseline"), (0.18, "candidate")):
            data.append([s * 1000.0 for s in latencies[size][model]])
            labels.append(model)
            positions.append(index + offset)
    boxes = axes.boxplot(data, positions=positions, widths=0.3, patch_artist=True, showfliers=True)
    for patch, label in zip(boxes["boxes"], labels):
        patch.set_facecolor("#9ecae1" if label == "baseline" else "#fdae6b")
    axes.set_xticks(range(len(sizes)), [f"batch {s}" for s in sizes])
    axes.set_ylabel("latency (ms)")
    axes.set_title("Latency: baseline (blue), candidate (orange)", fontsize=10)
    return figure


def _scores_plot(plt: ModuleType, decision: Decision) -> Figure:
    samples = decision.samples
    figure: Figure  # what pyplot.subplots makes; the module, passed in, is untyped
    figure, axes = plt.subplots(figsize=(4.0, 3.6))
    axes.scatter(samples.baseline_scores, samples.candidate_scores, s=6, alpha=0.5, color="#3182bd")
    low = min([*samples.baseline_scores, *samples.candidate_scores])
    high = max([*samples.baseline_scores, *samples.candidate_scores])
    axes.plot([low, high], [low, high], color="#999", linewidth=1, linestyle="--")
    axes.set_xlabel(f"baseline {samples.score_output}")
    axes.set_ylabel(f"candidate {samples.score_output}")
    axes.set_title("Candidate vs baseline scores")
    return figure


def _agreement_plot(plt: ModuleType, agreement: dict[str, float]) -> Figure:
    figure: Figure  # what pyplot.subplots makes; the module, passed in, is untyped
    figure, axes = plt.subplots(figsize=(4.0, 3.6))
    names = sorted(agreement)
    values = [agreement[n] * 100.0 for n in names]
    axes.barh(names, values, color=["#31a354" if v >= 99.0 else "#e6550d" for v in values])
    axes.set_xlim(0, 100)
    axes.set_xlabel("rows where both agree (%)")
    axes.set_title("Class agreement")
    return figure


def _plots(decision: Decision) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = decision.samples
    drawn: list[tuple[str, str]] = []
    makers: list[tuple[str, Callable[[], Figure]]] = []
    if samples.latencies:
        makers.append(("latency", lambda: _latency_plot(plt, samples.latencies)))
    if samples.baseline_scores:
        makers.append(("scores", lambda: _scores_plot(plt, decision)))
    if samples.agreement:
        makers.append(("agreement", lambda: _agreement_plot(plt, samples.agreement)))
    with plt.rc_context({"svg.fonttype": "none"}):
        for name, make in makers:
            figure = make()
            try:
                drawn.append((name, _svg(figure)))
            finally:
                plt.close(figure)
    return drawn


def render_report(decision: Decision) -> str:
    """The decision as one self-contained HTML page (no scripts, no network).

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> import os
        >>> from tfship.promote import PromoteOptions, promote
        >>> os.mkdir("serving")
        >>> page = render_report(promote("m/1", "serving/m", PromoteOptions(dry_run=True)))
        >>> page.startswith("<!DOCTYPE html>")
        True
    """
    esc = html.escape
    verdict_class = "pass" if decision.promoted else "fail"
    rows = []
    for check in decision.checks:
        notes = "".join(f"<div class='notes'>{esc(n)}</div>" for n in check.notes)
        rows.append(
            f"<tr class='check' data-check='{esc(check.name)}'><td>{esc(check.name)}</td>"
            f"<td class='{esc(check.verdict)}'>{esc(check.verdict)}</td>"
            f"<td>{esc(check.summary)}{notes}</td></tr>"
        )
    plots = "".join(f"<div class='plot' id='plot-{name}'>{svg}</div>" for name, svg in _plots(decision))
    facts = [
        ("candidate", decision.candidate),
        ("fingerprint", decision.fingerprint or "-"),
        ("base path", decision.base_path),
        ("baseline", decision.baseline or "none"),
        ("time", decision.time),
    ]
    fact_rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(str(v))}</td></tr>" for k, v in facts)
    notes = "".join(f"<li>{esc(n)}</li>" for n in decision.notes)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>tfship promote: {esc(decision.candidate)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>tfship promote</h1><p class='verdict {verdict_class}'>{esc(decision.verdict_line())}</p>"
        f"<table>{fact_rows}</table>"
        "<table id='checks'><tr><th>check</th><th>verdict</th><th>numbers</th></tr>"
        f"{''.join(rows)}</table>"
        + (f"<ul class='notes'>{notes}</ul>" if notes else "")
        + f"<div class='plots'>{plots}</div></body></html>\n"
    )


def write_report(decision: Decision, path: str | os.PathLike[str]) -> Path:
    """Write ``render_report(decision)`` to ``path`` (through a temporary sibling)."""
    target = Path(path)
    page = render_report(decision)
    write_atomically(target, page)
    return target
