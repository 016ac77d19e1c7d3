"""Wall time of ``tfship inspect show --all`` against ``saved_model_cli show --all``.

Both run as fresh subprocesses on the same exports, interleaved, several times each; the table
gives the median of each and their ratio (tfship / saved_model_cli; below 1.0 is faster). The
outputs are compared too (ops sets normalised), so a fast wrong answer cannot win.

Usage: ``python benchmarks/inspect_show.py [--reps N] [--short] [EXPORT_DIR ...]`` (default: builds
one export of each kind in a temporary directory; ``--short``: one run of each command, on two of
the kinds, an Estimator's export and a TF2 module's).
"""

from __future__ import annotations

import argparse
import pathlib
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys
import tempfile  # noqa: E402
import time  # noqa: E402

BIN = pathlib.Path(sys.executable).parent
_OPS = re.compile(r"(contains the following ops: )\{(.*)\}$", re.M)


def _normalise(text: str) -> str:
    return _OPS.sub(lambda m: m.group(1) + ",".join(sorted(m.group(2).split(", "))), text)


def _timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


KINDS = ("linear_parsing", "custom_sparse", "multi_tag", "tf2_module", "keras")
SHORT_KINDS = ("linear_parsing", "tf2_module")


def _build(root: pathlib.Path, kinds: tuple[str, ...]) -> dict[str, pathlib.Path]:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "inspect"))
    import inspect_exports

    return {kind: inspect_exports.BUILDERS[kind](root) for kind in kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="*", type=pathlib.Path)
    parser.add_argument("--reps", type=int, default=None, help="runs of each command (default 5)")
    parser.add_argument("--short", action="store_true", help="one run of each command, two exports")
    args = parser.parse_args()
    if args.reps is None:
        args.reps = 1 if args.short else 5
    with tempfile.TemporaryDirectory() as tmp:
        if args.exports:
            exports = {p.parent.name or str(p): p for p in args.exports}
        else:
            print("building exports ...", file=sys.stderr)
            exports = _build(pathlib.Path(tmp), SHORT_KINDS if args.short else KINDS)
        rows = []
        for name, path in exports.items():
            ours_cmd = [str(BIN / "tfship"), "inspect", "show", str(path), "--all"]
            ref_cmd = [str(BIN / "saved_model_cli"), "show", "--dir", str(path), "--all"]
            ours, ref = [], []
            for _ in range(args.reps):
                t, out_ours = _timed(ours_cmd)
                ours.append(t)
                t, out_ref = _timed(ref_cmd)
                ref.append(t)
            same = _normalise(out_ours) == _normalise(out_ref)
            rows.append((name, statistics.median(ours), statistics.median(ref), same))
    print(f"{'export':<16}{'tfship (s)':>12}{'saved_model_cli (s)':>22}{'ratio':>8}  same output")
    for name, ours_t, ref_t, same in rows:
        print(f"{name:<16}{ours_t:>12.3f}{ref_t:>22.3f}{ours_t / ref_t:>8.3f}  {same}")
    total_ours = sum(r[1] for r in rows)
    total_ref = sum(r[2] for r in rows)
    print(
        f"{'all':<16}{total_ours:>12.3f}{total_ref:>22.3f}{total_ours / total_ref:>8.3f}  "
        f"{all(r[3] for r in rows)}"
    )
    print(f"(median of {args.reps} interleaved runs per command; ratio = tfship / saved_model_cli)")
    if not all(r[3] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
