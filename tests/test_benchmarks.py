"""Every script in ``benchmarks/`` runs to the end in its ``--short`` mode and prints its ratios.

``make bench`` measures at full size; ``--short`` runs every path of a script on small sizes with
few repeats and judges no target, so a change that breaks a benchmark fails here. A script added to
``benchmarks/`` is picked up by itself: it must accept ``--short``, exit 0 and print at least one
ratio written as ``1.23x``; the scripts below also name the rows they must print.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The benchmarks measure tfship against tf.estimator's own paths, so they run on the estimator
# lane; lanes.py measures the run lane from there.
pytestmark = [pytest.mark.slow, pytest.mark.estimator]

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
RATIO = re.compile(r"\b\d+\.\d+x\b")
NUMBER = r"[\d,.]+"

# Per script, one pattern per line it must print: each row it claims, with its figures.
ROWS: dict[str, list[str]] = {
    "install.py": [
        rf"^core \(Python 3\.\d+\) +{NUMBER}",
        r"^full \(this venv\)",
        r"^core / full size: \d\.\d+",
    ],
    "promote.py": [
        r"^tfship promote --dry-run, 50 replayed requests: \d+\.\d s wall",
        *(
            rf"^{check} +(pass|fail|skip) +\d+\.\d\d$"
            for check in ("ready", "compatible", "serves", "same answers", "as good", "as fast")
        ),
    ],
    "spark.py": [
        rf"^{path} +2,000 +{NUMBER} +[\d,]+ +\d+\.\d\d"
        for path in (
            r"spark runner \(tfship, local\[2\]\)",
            r"hand-written predict_batch_udf \(local\[2\]\)",
            r"local runner \(tfship predict, in process\)",
        )
    ],
    "cli.py": [
        rf"^tfship --help +{NUMBER} +{NUMBER} +1\.0x +no$",
        *(
            rf"^tfship {command} +{NUMBER} +{NUMBER} +{NUMBER}x +no$"
            for command in (
                r"inspect show EXPORT",
                r"client status \(gRPC\)",
                r"client status \(REST\)",
                r"client predict \(gRPC\)",
            )
        ),
        r"^target: client status over gRPC < 1 s: not judged \(--short\)",
    ],
    "cluster.py": [
        r"^training throughput, 40 steps of 64 examples",
        rf"^one process +1 +{NUMBER} +1\.00x",
        rf"^--local-cluster workers=0,ps=1 +1 +{NUMBER} +{NUMBER}x",
    ],
    "export.py": [
        rf"^tf\.estimator export_saved_model +{NUMBER} +1\.00x$",
        rf"^tfship export_model, no verification +{NUMBER} +{NUMBER}x$",
        rf"^tfship export_model, verified +{NUMBER} +{NUMBER}x$",
        rf"^tfship export_model, verified \+ 10 warmup +{NUMBER} +{NUMBER}x$",
    ],
    "inspect_show.py": [
        *(
            rf"^{kind} +{NUMBER} +{NUMBER} +\d+\.\d{{3}}  True$"
            for kind in ("linear_parsing", "tf2_module", "all")
        ),
    ],
    "lanes.py": [
        r"^2\.15 +3\.\d+\.\d+ +2\.15\.\d+ ",
        r"^newest +3\.\d+\.\d+ +\d+\.\d+\.\d+ ",
        *(
            rf"^TF \d+\.\d+\.\d+ \({venv}\) +{NUMBER} \({NUMBER}-{NUMBER}\) +{NUMBER} +{NUMBER} "
            rf"\({NUMBER}-{NUMBER}\) +{NUMBER} +{NUMBER}$"
            for venv in (r"\.venv", r"\.venv-run")
        ),
        rf"^newest / 2\.15, tfship predict rows/s: job {NUMBER}x \({NUMBER}-{NUMBER}x\), wall "
        rf"{NUMBER}x \({NUMBER}-{NUMBER}x\)$",
        *(
            rf"^{side} +{n} +{NUMBER} \({NUMBER}-{NUMBER}\) +{NUMBER} \({NUMBER}-{NUMBER}\) +"
            rf"{NUMBER}x \({NUMBER}-{NUMBER}x\)$"
            for side in ("tfship serve", "floor running the model", r"transport floor \(constant reply\)")
            for n in (1, 8)
        ),
        r"^the same answers from both servers \(probabilities within 1e-5\): True$",
        *(
            rf"^tfship serve / floor running the model, {n} clients?: 2\.15 {NUMBER}x, newest "
            rf"{NUMBER}x$"
            for n in (1, 8)
        ),
        rf"^the model's own run per call, 1 client .*: 2\.15 {NUMBER} ms, newest {NUMBER} ms "
        rf"\(newest / 2\.15 {NUMBER}x the time\)$",
    ],
    "loaders.py": [
        rf"^CSV -> CSV +3,000 +{NUMBER} +{NUMBER} +{NUMBER} +1\.00x \(1\.00-1\.00\)$",
        *(
            rf"^{path} +3,000 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}x \({NUMBER}-{NUMBER}\)"
            for path in (
                "model alone, serialized batches",
                "model alone, parsed features",
                "Parquet -> CSV",
                "TFRecord -> CSV",
                "JSONL -> CSV",
            )
        ),
        rf"^  CSV -> CSV / model alone, serialized batches: {NUMBER}x \({NUMBER}-{NUMBER}\)  target >=0\.9$",
        *(
            rf"^CSV -> {fmt} \({outputs}\) +3,000 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}x"
            for fmt in ("csv", "jsonl", "parquet")
            for outputs in ("default outputs", "all outputs")
        ),
        rf"^tfship predict as a command on 3,000 rows: wall {NUMBER} s, job {NUMBER} s, wall - job {NUMBER} s"
        rf".* bare import tensorflow \+ load {NUMBER} s .*peak RSS {NUMBER} MB$",
        rf"^tfship predict as a command on 4,000 rows: {NUMBER} s wall, job {NUMBER} s, peak RSS {NUMBER} MB",
        *(
            rf"^{path} +3,000 +{NUMBER} +{NUMBER} +{NUMBER} +>={target}$"
            for path, target in (
                (r"estimator\.predict \(tf\.data CSV\)", "2"),
                (r"user loop \(pandas \+ Example \+ TF2 signature\)", "5"),
            )
        ),
    ],
    "readers.py": [
        *(
            rf"^{fmt} +3,000 +{NUMBER} +{NUMBER} \({NUMBER}-{NUMBER}\) +{NUMBER}x \({NUMBER}-{NUMBER}x\)$"
            for fmt in ("csv", "jsonl", "parquet")
        ),
        rf"^CPU seconds, median: csv {NUMBER}, jsonl {NUMBER}, parquet {NUMBER}; JSON Lines / CSV {NUMBER}x",
        r"^the same converted columns from every format: True$",
        rf"^target: JSON Lines >= 0\.5x CSV's rows/s: {NUMBER}x, not judged \(--short\)$",
    ],
    "protos.py": [
        rf"^tensorflow\.SavedModel +\d+ +{NUMBER} +{NUMBER} +{NUMBER}  True$",
        rf"^tensorflow\.serving\.PredictResponse +\d+ +{NUMBER} +{NUMBER} +{NUMBER}  True$",
    ],
    "serving.py": [
        rf"^  LocalModel\.run \(in process\) +{NUMBER} ms$",
        *(
            rf"^  gRPC {where}, {what} +{NUMBER} ms \( *{NUMBER}x\)$"
            for where in ("server", r"floor \(constant reply\)")
            for what in ("official stub, reply parsed", "reply bytes only")
        ),
        rf"^ +8 \| +{NUMBER} \|( +{NUMBER} \( *{NUMBER}x\) \|){{2}} +{NUMBER} \( *{NUMBER}x\)$",
        rf"^ +8 \| +{NUMBER} \| +{NUMBER} \| +{NUMBER}x \| +{NUMBER} \| +{NUMBER}x$",
        rf"^p50 latency over one connection, http\.client: REST {NUMBER} ms, gRPC {NUMBER} ms",
        rf"^p50 latency over one connection, ServingClient: REST {NUMBER} ms, gRPC {NUMBER} ms",
        rf"^tfship serve / floor, requests/s: 8 clients {NUMBER}x \(target >= 0\.80x at 1 and 8 clients\)$",
        rf"^tfship serve / floor, time of the 4 MiB answer: reply parsed {NUMBER}x, bytes only "
        rf"{NUMBER}x \(target <= 1\.25x\)$",
        rf"^floor running the model / floor, requests/s: 8 clients {NUMBER}x$",
        rf"^tfship serve / floor running the model, requests/s: 8 clients {NUMBER}x$",
        rf"^floor running the model / floor, time of the 4 MiB answer, bytes only: {NUMBER}x; "
        rf"tfship serve / floor running the model: {NUMBER}x$",
        r"^targets: not judged \(--short\)$",
        rf"^ServingClient REST / plain http\.client REST, requests/s: 8 clients {NUMBER}x$",
        rf"^ +8 clients \| no logging +{NUMBER} \| logging +{NUMBER} \| {NUMBER}x$",
        rf"^request logging / none, requests/s: 8 clients {NUMBER}x \(target >= 0\.95x at 1 and 8 clients\)$",
        r"^records logged: [\d,]+ written, [\d,]+ dropped at a full queue$",
        rf"^ +8 \| +{NUMBER} \| +{NUMBER} \| +{NUMBER}x \| +{NUMBER} \| +{NUMBER} \| +{NUMBER}x$",
        rf"^p50 latency, batch 1, one connection: V2 gRPC raw {NUMBER} ms, Predict gRPC {NUMBER} ms "
        rf"\({NUMBER}x\); V2 REST binary {NUMBER} ms, Predict REST {NUMBER} ms \({NUMBER}x\)$",
        rf"^1024x1024 float32 answer, median of 20 calls: V2 gRPC raw {NUMBER} ms, Predict {NUMBER} ms "
        rf"\({NUMBER}x, target <= 1\.10x\)$",
    ],
    "serving_client.py": [
        *(
            rf"^{case} +{NUMBER} +{NUMBER} +{NUMBER}x  "
            for case in (
                r"decode 1M floats \(float_val\)",
                "encode 64x1000 Python floats",
                r"encode 10k Python strings \(100 B\)",
                "Predict round trip, 1024x1024 f32 out",
                "REST Predict batch 1, kept-alive vs a connection per call",
                "HTTPS Predict batch 1, kept-alive vs a connection per call",
                "REST/httpx Predict batch 1, tfship vs plain httpx",
                "REST/httpx Predict batch 1024, tfship vs plain httpx",
                r"REST/http\.client Predict batch 1, tfship vs plain http\.client",
            )
        ),
    ],
}


def _run_short(script: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    # this checkout's sources first, also for the commands the scripts start
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run(
        [sys.executable, str(script), "--short"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.name for script in SCRIPTS])
def test_short_run_prints_every_ratio(script: Path) -> None:
    if script.name == "install.py":
        from venvs import core_venv

        core_venv("6")  # --short measures the core venv the core-install tests use
    done = _run_short(script)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    lines = done.stdout.splitlines()
    # a script without rows of its own here (a new one) prints at least one ratio such as 1.23x
    patterns = ROWS.get(script.name, [RATIO.pattern])
    missing = [pattern for pattern in patterns if not any(re.search(pattern, line) for line in lines)]
    assert not missing, f"no line matches {missing}\n{done.stdout}"


def test_every_script_with_rows_exists() -> None:
    # the rows above belong to scripts that exist: a rename must move its rows too
    assert set(ROWS) <= {script.name for script in SCRIPTS}
