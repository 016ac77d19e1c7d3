"""``promote``: run the six checks on a candidate against the served baseline, then publish.

Every check runs even after one fails, so a refusal lists everything that is wrong at once.
Both models are served by ``tfship serve`` in processes of their own; the requests, the
latency calls and the evaluation go to both in the same run, interleaved.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tfship._wire import METADATA_FILE, WARMUP_FILE, version_numbers
from tfship.errors import InputError, ModelError, TfshipError, VerdictError
from tfship.inspect import (
    DEFAULT_DENYLIST,
    Change,
    SavedModelInfo,
    check_saved_model,
    content_hash,
    diff_saved_models,
    example_request,
    read_saved_model,
    read_warmup,
)
from tfship.inspect._shared import host_effects, host_effects_refusal
from tfship.promote._checks import (
    FAIL,
    PASS,
    Check,
    OutputComparison,
    Threshold,
    as_fast,
    as_good,
    compare_classes,
    compare_output,
    eval_metrics,
    same_answers,
    skipped,
)
from tfship.promote._publish import now_text, previous_version, publish_copy
from tfship.promote._requests import (
    Request,
    RequestSet,
    batched,
    from_records,
    load_requests,
    request_of,
    signature_fields,
)
from tfship.promote._serving import LoadFailure, ServedModel, work_directory
from tfship.records import read_records

if TYPE_CHECKING:
    from tfship.serve_client import ServingClient

CHECKS = ("ready", "compatible", "serves", "same answers", "as good", "as fast")
"""The checks of a promotion, in the order they run and a ``Decision`` lists them."""
_EVAL_CHUNK = 64


class PromotionRefusedError(VerdictError):
    """Raised when a candidate fails a check of ``promote``; nothing was published (exit 3)."""


@dataclass(frozen=True)
class PromoteOptions:
    """What ``promote`` compares and how strictly; the defaults are the command's.

    Example:
        >>> PromoteOptions(max_diff=0.2).batches
        (1, 32)
    """

    baseline: Path | None = None
    requests: Path | None = None
    count: int = 100
    signature: str | None = None
    eval_file: Path | None = None
    label: str | None = None
    min_agreement: float = 0.99
    max_diff: float = 0.05
    thresholds: tuple[Threshold, ...] = ()
    changes: tuple[Threshold, ...] = ()
    batches: tuple[int, ...] = (1, 32)
    latency_calls: int = 60
    max_latency_ratio: float = 1.25
    max_load_seconds: float = 120.0
    call_timeout: float = 30.0
    dry_run: bool = False
    #: The TensorFlow of the server that will serve the candidate (``"2.15"``, ``"2.21.0"``), whose
    #: ops ``ready`` judges it against; ``None``: the one installed here, which the served checks run.
    target_tf: str | None = None
    #: Ops with side effects on the host (``WriteFile``, ``PyFunc``, ...) the candidate may use:
    #: any other one of them refuses it before it is loaded, since loading runs its init ops.
    allow_ops: tuple[str, ...] = ()


@dataclass
class Samples:
    """What the report plots: latencies, and the scores of one output for both models."""

    latencies: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    score_output: str | None = None
    baseline_scores: list[float] = field(default_factory=list)
    candidate_scores: list[float] = field(default_factory=list)
    agreement: dict[str, float] = field(default_factory=dict)


@dataclass
class Decision:
    """The verdict of a promotion: every check, and the version published (if any).

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> import os
        >>> os.mkdir("serving")
        >>> decision = promote("m/1", "serving/m")
        >>> decision.promoted, decision.version
        (True, 1)
    """

    action: str
    candidate: str
    base_path: str
    baseline: str | None
    fingerprint: str | None
    checks: list[Check]
    dry_run: bool = False
    version: int | None = None
    path: str | None = None
    time: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    samples: Samples = field(default_factory=Samples)

    @property
    def promoted(self) -> bool:
        """Whether every check passed (published, or would be with ``dry_run``)."""
        return not any(c.failed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        """The checks that refused the candidate."""
        return [c for c in self.checks if c.failed]

    def verdict_line(self) -> str:
        """The closing line: promoted (to which version), or refused (by which checks)."""
        if not self.promoted:
            return f"refused: {', '.join(c.name for c in self.failed)} failed; nothing was published"
        if self.dry_run:
            return "would promote (dry run): nothing was published"
        if self.action == "rollback":
            return f"rolled back: version {self.version} serves {self.candidate}"
        return f"promoted: version {self.version} at {self.path}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: what ``--json`` prints and the decision record holds."""
        return {
            "schema": "tfship.promote",
            "format": 1,
            "action": self.action,
            "promoted": self.promoted,
            "dry_run": self.dry_run,
            "version": self.version,
            "path": self.path,
            "candidate": self.candidate,
            "fingerprint": self.fingerprint,
            "base_path": self.base_path,
            "baseline": self.baseline,
            "time": self.time,
            "checks": [c.to_dict() for c in self.checks],
            "seconds": self.seconds,
            "notes": self.notes,
        }


# ------------------------------------------------------------------------------ inputs


def _saved_model_dir(path: Path, what: str) -> Path:
    if not path.exists():
        raise InputError(f"{what} {path}: no such directory")
    if not (path / "saved_model.pb").is_file() and not (path / "saved_model.pbtxt").is_file():
        versions = version_numbers(path)
        hint = f"; it holds versions {', '.join(map(str, versions[-3:]))}: give one" if versions else ""
        raise InputError(f"{what} {path}: not a SavedModel directory (no saved_model.pb){hint}")
    return path


def resolve_baseline(base: Path, given: Path | None) -> Path | None:
    """The baseline: ``given``, or the version TF Serving serves from ``base`` now (the newest)."""
    if given is not None:
        return _saved_model_dir(given, "baseline")
    numbers = version_numbers(base)
    return base / str(numbers[-1]) if numbers else None


def _validate(candidate: Path, base: Path, options: PromoteOptions) -> None:
    _saved_model_dir(candidate, "candidate")
    if base.exists() and not base.is_dir():
        raise InputError(f"base path {base}: not a directory")
    if not base.exists() and not base.parent.is_dir():
        raise InputError(f"base path {base}: neither it nor its parent directory exists")
    for path, what in ((options.requests, "requests"), (options.eval_file, "eval")):
        if path is not None and not path.is_file():
            raise InputError(f"{what} file {path}: no such file")
    if options.count < 1:
        raise ValueError("count must be at least 1")
    if any(b < 1 for b in options.batches) or not options.batches:
        raise ValueError("batch sizes must be at least 1")


def _metadata_metrics(path: Path) -> dict[str, float]:
    try:
        data = json.loads((path / METADATA_FILE).read_text())
    except (OSError, ValueError):
        return {}
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if not isinstance(metrics, dict):
        return {}
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and k != "global_step"}


def _label_of(*paths: Path | None) -> str | None:
    for path in paths:
        if path is None:
            continue
        try:
            data = json.loads((path / METADATA_FILE).read_text())
            return str(data["schema"]["label"]["name"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


# ------------------------------------------------------------------------------ the run


class _Run:
    """One promotion's state while its checks run."""

    def __init__(self, candidate: Path, base: Path, options: PromoteOptions) -> None:
        self.candidate = candidate
        self.base = base
        self.options = options
        self.baseline = resolve_baseline(base, options.baseline)
        self.results: dict[str, Check] = {}
        self.seconds: dict[str, float] = {}
        self.notes: list[str] = []
        self.samples = Samples()
        self.info: SavedModelInfo | None = None
        self.baseline_info: SavedModelInfo | None = None
        self.servers: dict[str, ServedModel] = {}
        self.clients: dict[str, ServingClient] = {}
        self.candidate_answers: list[dict[str, Any] | None] = []
        #: the candidate's ops with side effects on the host that were not allowed: not loaded
        self.host_ops: list[str] = []

    def timed(self, name: str, action: Callable[[], Check]) -> None:
        started = time.perf_counter()
        self.results[name] = action()
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

    # -- 1. ready (protos here; the run of one request per signature once it is served)
    def ready(self) -> Check:
        allowed = frozenset(self.options.allow_ops)
        try:
            self.info = read_saved_model(self.candidate)
            report = check_saved_model(
                self.candidate, target_tf=self.options.target_tf, denylist=DEFAULT_DENYLIST - allowed
            )
        except ModelError as exc:
            return Check("ready", FAIL, f"unreadable: {exc}")
        # every MetaGraph: the server loads one, and nothing of the candidate runs before this
        self.host_ops = sorted({op for mg in self.info.meta_graphs for op in host_effects(mg, allowed)})
        if self.options.target_tf is not None:
            self.notes.append(
                f"ready judged the candidate's ops against TensorFlow {report.target_tf}, the target "
                "named; serves, same answers and as fast ran it on the TensorFlow installed here"
            )
        # promote gives the candidate its version number: its own directory name is free
        errors = [f"{f.check}: {f.message}" for f in report.errors if f.check != "version_dir"]
        if self.host_ops:  # said once, with the flag: not also as a denylisted op
            errors = [host_effects_refusal(self.host_ops)] + [
                e for e in errors if not e.startswith("denylisted_ops:")
            ]
        warnings = [f"{f.check}: {f.message}" for f in report.warnings]
        summary = f"{len(errors)} error(s), {len(warnings)} warning(s) on TensorFlow {report.target_tf}"
        if errors:
            summary += f"; {errors[0]}"
        numbers = {"findings": [f.to_dict() for f in report.findings]}
        return Check("ready", FAIL if errors else PASS, summary, numbers, warnings)

    # -- 2. compatible
    def compatible(self) -> Check:
        if self.baseline is None:
            return skipped("compatible")
        if self.info is None:
            return Check("compatible", FAIL, "the candidate could not be read")
        try:
            self.baseline_info = read_saved_model(self.baseline)
        except ModelError as exc:
            raise ModelError(f"baseline {self.baseline}: {exc}") from None
        report = diff_saved_models(self.baseline_info, self.info)
        breaking = report.breaking
        compatible = [c for c in report.changes if not c.breaking]
        numbers = {"changes": [c.to_dict() for c in report.changes]}
        notes = [f"{c.kind} {c.where}: {c.detail}" for c in compatible]
        if breaking:
            first = breaking[0]
            more = f" (+{len(breaking) - 1} more)" if len(breaking) > 1 else ""
            summary = f"{first.kind} {first.where}: {first.detail}{more}"
            return Check("compatible", FAIL, summary, numbers, notes)
        summary = "same interface" if not compatible else f"{_counted(compatible)}: {notes[0]}"
        return Check("compatible", PASS, summary, numbers, notes)

    # -- 3. serves
    def start_servers(self, workdir: Path) -> dict[str, str]:
        """Launch both servers at once, wait for each; returns model -> load failure."""
        models = {"candidate": self.candidate}
        if self.baseline is not None:
            models["baseline"] = self.baseline
        for name, path in models.items():
            self.servers[name] = ServedModel(path, name, workdir)
            self.servers[name].launch()
        failures = {}
        for name, server in self.servers.items():
            try:
                server.wait_ready(self.options.max_load_seconds)
                self.clients[name] = server.client(self.options.call_timeout)
            except LoadFailure as exc:
                failures[name] = str(exc)
        return failures

    def call(self, model: str, request: Request) -> dict[str, Any]:
        result = self.clients[model].predict(model, request.inputs, signature=request.signature)
        return dict(result.outputs)

    def signature_runs(self) -> dict[str, str | None]:
        """``inspect check --run`` on the served candidate: one request per signature."""
        assert self.info is not None
        runs: dict[str, str | None] = {}
        for key in self.info.meta_graph("serve").signatures:
            if key.startswith("__"):
                continue
            try:
                built = example_request(self.info, signature=key)
                inputs = request_of(built.verb, built.grpc, self.info).inputs
                self.clients["candidate"].predict("candidate", inputs, signature=key)
                runs[key] = None
            except TfshipError as exc:
                runs[key] = str(exc)
        return runs

    def serves(self, failure: str | None, replay: RequestSet | None) -> Check:
        if failure is not None:
            return Check("serves", FAIL, f"did not load: {failure}")
        assert replay is not None
        server = self.servers["candidate"]
        errors: list[str] = []
        for request in replay.requests:
            try:
                self.candidate_answers.append(self.call("candidate", request))
            except TfshipError as exc:
                self.candidate_answers.append(None)
                errors.append(str(exc))
        answered = len(replay.requests) - len(errors)
        summary = (
            f"loaded in {server.load_seconds:.1f} s ({self._warmup_text()}), "
            f"answered {answered}/{len(replay.requests)} requests from {replay.source}"
        )
        if errors:
            summary += f"; first error: {errors[0]}"
        numbers = {
            "load_seconds": server.load_seconds,
            "requests": len(replay.requests),
            "answered": answered,
            "source": replay.source,
        }
        return Check("serves", FAIL if errors else PASS, summary, numbers, list(replay.notes))

    def _warmup_text(self) -> str:
        path = self.candidate / WARMUP_FILE
        if not path.is_file():
            return "no warmup file"
        return f"{len(read_warmup(path))} warmup record(s) replayed"

    # -- 4. same answers
    def same(self, replay: RequestSet | None) -> Check:
        if self.baseline is None:
            return skipped("same answers")
        if "candidate" not in self.clients or replay is None:
            return Check("same answers", FAIL, "the candidate did not load")
        if "baseline" not in self.clients:
            return Check("same answers", FAIL, "the baseline did not load")
        pairs: dict[str, tuple[list[Any], list[Any]]] = {}
        for request, cand in zip(replay.requests, self.candidate_answers):
            try:
                base = self.call("baseline", request)
            except TfshipError as exc:
                return Check("same answers", FAIL, f"the baseline refused a request: {exc}")
            if cand is None:
                return Check("same answers", FAIL, "the candidate did not answer every request")
            for name in sorted(set(base) & set(cand)):
                pairs.setdefault(name, ([], []))
                pairs[name][0].append(base[name])
                pairs[name][1].append(cand[name])
        if not pairs:
            return Check("same answers", FAIL, "no output in common to compare")
        comparisons = [_compare(name, b, c) for name, (b, c) in pairs.items()]
        picked = _picked_classes(pairs)
        if picked is not None:
            comparisons = [picked if c.output == "classes" else c for c in comparisons]
        self._keep_scores(pairs, comparisons)
        check = same_answers(
            comparisons,
            min_agreement=self.options.min_agreement,
            max_diff=self.options.max_diff,
            over=_compared(replay, comparisons[0].rows),
        )
        check.numbers.update(source=replay.source, repeated=replay.repeated)
        return check

    def _keep_scores(
        self, pairs: dict[str, tuple[list[Any], list[Any]]], comparisons: Sequence[OutputComparison]
    ) -> None:
        for c in comparisons:
            if c.agreement is not None:
                self.samples.agreement[c.output] = c.agreement
        floats = [n for n, (b, _) in pairs.items() if np.issubdtype(b[0].dtype, np.floating)]
        preferred = [n for n in ("scores", "probabilities", "outputs", "predictions") if n in floats]
        chosen = (preferred or floats or [None])[0]
        if chosen is not None:
            base, cand = pairs[chosen]
            self.samples.score_output = chosen
            self.samples.baseline_scores = np.concatenate(base).ravel()[:5000].tolist()
            self.samples.candidate_scores = np.concatenate(cand).ravel()[:5000].tolist()

    # -- 5. as good
    def good(self) -> Check:
        options = self.options
        if options.eval_file is None:
            cand = _metadata_metrics(self.candidate)
            base = _metadata_metrics(self.baseline) if self.baseline is not None else None
            if base is not None:
                common = set(cand) & set(base)
                cand = {k: v for k, v in cand.items() if k in common}
                base = {k: v for k, v in base.items() if k in common}
            return as_good(
                cand,
                base,
                values=options.thresholds,
                changes=options.changes,
                source="the exporters' eval metrics",
            )
        if "candidate" not in self.clients:
            return Check("as good", FAIL, "the candidate did not load")
        label = options.label or _label_of(self.candidate, self.baseline)
        if label is None:
            raise InputError("the label of the eval records is not known: the exports record no schema")
        assert self.info is not None
        records = read_records(
            options.eval_file, fields=signature_fields(self.info, options.signature), places=True
        )
        evals = from_records(
            records, self.info, signature=options.signature, source=str(options.eval_file), label=label
        )
        assert evals.labels is not None
        cand_metrics = eval_metrics(self._answers("candidate", evals.requests), evals.labels)
        base_metrics = None
        if "baseline" in self.clients:
            base_metrics = eval_metrics(self._answers("baseline", evals.requests), evals.labels)
        source = f"{len(evals.requests)} labelled records of {options.eval_file.name}"
        check = as_good(
            cand_metrics, base_metrics, values=options.thresholds, changes=options.changes, source=source
        )
        check.notes.extend(evals.notes)
        return check

    def _answers(self, model: str, requests: Sequence[Request]) -> dict[str, Any]:
        parts: dict[str, list[Any]] = {}
        for start in range(0, len(requests), _EVAL_CHUNK):
            chunk = requests[start : start + _EVAL_CHUNK]
            outputs = self.call(model, batched(chunk, sum(r.rows for r in chunk)))
            for name, value in outputs.items():
                parts.setdefault(name, []).append(value)
        return {name: np.concatenate(values) for name, values in parts.items()}

    # -- 6. as fast
    def fast(self, replay: RequestSet | None) -> Check:
        if self.baseline is None:
            return skipped("as fast")
        if replay is None or len(self.clients) < 2:
            return Check("as fast", FAIL, "both models must be served to be timed")
        latencies: dict[int, dict[str, list[float]]] = {}
        for size in self.options.batches:
            request = batched(replay.requests, size)
            times: dict[str, list[float]] = {"baseline": [], "candidate": []}
            for model in ("baseline", "candidate"):  # warm both at this batch size first
                for _ in range(3):
                    self.call(model, request)
            for index in range(self.options.latency_calls):
                order = ("baseline", "candidate") if index % 2 == 0 else ("candidate", "baseline")
                for model in order:
                    started = time.perf_counter()
                    self.call(model, request)
                    times[model].append(time.perf_counter() - started)
            latencies[size] = times
        self.samples.latencies = latencies
        check = as_fast(
            latencies, max_ratio=self.options.max_latency_ratio, over=_timed(replay, self.options.batches)
        )
        check.numbers.update(source=replay.source, repeated=replay.repeated)
        return check

    def stop(self) -> None:
        for client in self.clients.values():
            client.close()
        for server in self.servers.values():
            server.stop()


def _compared(replay: RequestSet, rows: int) -> str:
    """What the same answers line compared: one request sent again and again measures one row."""
    if replay.repeated:
        return (
            f"one request ({replay.source}) repeated {len(replay.requests)} times, not {rows} distinct rows"
        )
    return f"{rows} rows from {replay.source}"


def _timed(replay: RequestSet, batches: Sequence[int]) -> str:
    """Which requests the as fast line timed: each batch size is one call, sent again and again."""
    sizes = ", ".join(map(str, batches))
    if replay.repeated:
        return f"one request ({replay.source}) repeated to fill batches of {sizes}"
    rows = sum(r.rows for r in replay.requests if r.signature == replay.requests[0].signature)
    cycled = " (again from the first to fill a larger batch)" if max(batches) > rows else ""
    return f"batches of {sizes} rows taken in order from the {rows} rows of {replay.source}{cycled}"


_CHANGE_WORDS = {"_added": "addition", "_removed": "removal"}


def _counted(changes: Sequence[Change]) -> str:
    """``1 change, 2 additions``: what a compatible diff holds, each kind of change by its name."""
    counts: dict[str, int] = {}
    for change in changes:
        word = next((w for end, w in _CHANGE_WORDS.items() if change.kind.endswith(end)), "change")
        counts[word] = counts.get(word, 0) + 1
    return ", ".join(
        f"{counts[w]} {w}{'s' * (counts[w] != 1)}" for w in ("change", "addition", "removal") if w in counts
    )


def _picked_classes(pairs: dict[str, tuple[list[Any], list[Any]]]) -> OutputComparison | None:
    try:
        joined = {
            k: (np.concatenate(b), np.concatenate(c))
            for k, (b, c) in pairs.items()
            if k in ("classes", "scores")
        }
    except ValueError:  # shapes that differ between requests: no class matrix to pick from
        return None
    return compare_classes({k: v[0] for k, v in joined.items()}, {k: v[1] for k, v in joined.items()})


def _compare(name: str, base: list[Any], cand: list[Any]) -> OutputComparison:
    try:
        return compare_output(name, np.concatenate(base), np.concatenate(cand))
    except ValueError:  # outputs whose shapes differ between requests: compare call by call
        return compare_output(name, np.array(base, dtype=object), np.array(cand, dtype=object))


def _add_runs(check: Check, runs: dict[str, str | None]) -> Check:
    failed = {k: v for k, v in runs.items() if v is not None}
    check.numbers["runs"] = runs
    if not failed:
        check.summary += f"; {len(runs)} signature(s) answered a request"
        return check
    key, cause = next(iter(failed.items()))
    return Check(
        "ready",
        FAIL,
        f"{check.summary}; signature {key} cannot answer a request: {cause}",
        check.numbers,
        check.notes,
    )


def promote(
    candidate: str | Path,
    base_path: str | Path,
    options: PromoteOptions | None = None,
    *,
    on_check: Callable[[Check], None] | None = None,
) -> Decision:
    """Check ``candidate`` against the version served from ``base_path`` and publish it there
    as the next version when every check passes (not with ``options.dry_run``).

    Args:
        candidate: a SavedModel (version) directory.
        base_path: the directory TF Serving watches.
        options: what to compare and how strictly.
        on_check: called with each check as soon as its verdict is known, in order.

    Returns:
        The ``Decision``; ``decision.promoted`` is False when a check failed (nothing was
        published then).

    Raises:
        InputError: a path or file is missing or of the wrong kind, a threshold names a
            metric that was not measured, or tfship has no op table for ``options.target_tf``.
        ModelError: the baseline cannot be read.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> import os
        >>> os.mkdir("serving")
        >>> decision = promote("m/1", "serving/m")
        >>> decision.verdict_line()
        'promoted: version 1 at serving/m/1'
    """
    options = options or PromoteOptions()
    candidate, base = Path(candidate), Path(base_path)
    _validate(candidate, base, options)
    run = _Run(candidate, base, options)
    if run.baseline is not None and run.baseline.resolve() == candidate.resolve():
        raise InputError(f"candidate {candidate} is the baseline itself; nothing to promote")
    emitted: list[str] = []

    def emit(*names: str) -> None:
        for name in names:
            if name in run.results and name not in emitted and on_check is not None:
                on_check(run.results[name])
            emitted.append(name)

    run.timed("ready", run.ready)
    run.timed("compatible", run.compatible)
    try:
        with work_directory() as workdir:
            _serve_and_compare(run, workdir, emit)
    finally:
        run.stop()
    decision = Decision(
        "promote",
        str(candidate),
        str(base),
        None if run.baseline is None else str(run.baseline),
        content_hash(candidate) if run.info is not None else None,
        [run.results[name] for name in CHECKS],
        dry_run=options.dry_run,
        time=now_text(),
        seconds={k: round(v, 3) for k, v in run.seconds.items()},
        notes=run.notes,
        samples=run.samples,
    )
    if decision.promoted and not options.dry_run:
        started = time.perf_counter()
        record = {**decision.to_dict(), "source": str(candidate.resolve())}
        decision.version, final = publish_copy(candidate, base, record)
        decision.path = str(final)
        decision.seconds["publish"] = round(time.perf_counter() - started, 3)
    return decision


def _serve_and_compare(run: _Run, workdir: Path, emit: Callable[..., None]) -> None:
    replay = None
    if run.info is not None:  # the requests are read before any model is loaded
        label = run.options.label or _label_of(run.candidate, run.baseline)
        replay = load_requests(
            run.options.requests,
            run.info,
            count=run.options.count,
            signature=run.options.signature,
            eval_path=run.options.eval_file,
            label=label,
        )
    started = time.perf_counter()
    if run.host_ops:  # loading runs its init ops: refused before anything of it runs
        failures = {"candidate": host_effects_refusal(run.host_ops)}
    elif run.info is None:
        failures = {"candidate": "unreadable"}
    else:
        failures = run.start_servers(workdir)
    load_seconds = time.perf_counter() - started
    if "candidate" not in failures:
        run.timed("ready", lambda: _add_runs(run.results["ready"], run.signature_runs()))
    emit("ready", "compatible")
    run.seconds["serves"] = load_seconds
    run.timed("serves", lambda: run.serves(failures.get("candidate"), replay))
    if "baseline" in failures:
        run.notes.append(f"the baseline did not load: {failures['baseline']}")
    emit("serves")
    run.timed("same answers", lambda: run.same(replay))
    emit("same answers")
    run.timed("as good", run.good)
    emit("as good")
    run.timed("as fast", lambda: run.fast(replay))
    emit("as fast")


def rollback(base_path: str | Path, *, dry_run: bool = False) -> Decision:
    """Republish the version before the newest as the newest, with its own decision record.

    Raises:
        InputError: the base path has no older version with other contents.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "serving/m/1", signatures=m.f)
        >>> m.g = tf.function(lambda x: {"y": 3 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
        >>> tf.saved_model.save(m, "serving/m/2", signatures=m.g)
        >>> rollback("serving/m").verdict_line()
        'rolled back: version 3 serves serving/m/1'
    """
    base = Path(base_path)
    if not base.is_dir():
        raise InputError(f"base path {base}: no such directory")
    newest, previous = previous_version(base)
    source = base / str(previous)
    check = Check(
        "rollback",
        PASS,
        f"version {newest} is replaced by a copy of version {previous}",
        {"from": newest, "restores": previous},
    )
    decision = Decision(
        "rollback",
        str(source),
        str(base),
        str(base / str(newest)),
        content_hash(source),
        [check],
        dry_run=dry_run,
        time=now_text(),
    )
    if not dry_run:
        record = {**decision.to_dict(), "source": str(source.resolve())}
        decision.version, final = publish_copy(source, base, record)
        decision.path = str(final)
    return decision
