"""LatestExporter, FinalExporter, BestExporter: tf.estimator parity and the bugs they fix."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest
from export_helpers import input_fn, make_classifier, numeric_dirs, parse_spec

from tfship.exporters import (
    BestExporter,
    FinalExporter,
    LatestExporter,
    MetricNotFoundError,
    best_checkpoint,
    parsing_receiver,
    read_eval_history,
)
from tfship.exporters._shared import resolve_mode


class _Fast(TypedDict):
    verify: bool


FAST: _Fast = {"verify": False}


def _exported(path: str | None) -> Path:
    assert path is not None, "the exporter exported nothing"
    return Path(path)


def _receiver() -> Any:
    return parsing_receiver(parse_spec())


def _evals(
    exporter: Any, est: Any, base: Path, ckpt: str, values: list[float], metric: str = "auc"
) -> list[Any]:
    return [
        exporter.export(est, str(base), ckpt, {"loss": 1.0, metric: v, "global_step": 10 + i}, False)
        for i, v in enumerate(values)
    ]


def test_exporters_are_accepted_by_eval_spec_and_names_are_checked() -> None:
    from tensorflow_estimator import estimator as est

    exporters = [
        LatestExporter("a", _receiver()),
        BestExporter("b", _receiver()),
        FinalExporter("c", _receiver()),
    ]
    spec = est.EvalSpec(input_fn, exporters=exporters)
    assert [e.name for e in spec.exporters] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="must have unique names"):
        est.EvalSpec(input_fn, exporters=[LatestExporter("a", _receiver()), BestExporter("a", _receiver())])
    for bad in ("", None, 3):
        with pytest.raises(ValueError, match="non-empty string"):
            LatestExporter(bad, _receiver())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="receiver"):
        LatestExporter("x", None)


@pytest.mark.parametrize("keep", [0, -1, 1.5, True])
def test_keep_must_be_positive(keep: Any) -> None:
    with pytest.raises(ValueError, match="keep must be a positive int"):
        LatestExporter("x", _receiver(), exports_to_keep=keep)
    with pytest.raises(ValueError, match="keep must be a positive int"):
        BestExporter("x", _receiver(), exports_to_keep=keep)


def test_compare_fn_contract_is_checked() -> None:
    with pytest.raises(ValueError, match="best_eval_result and current_eval_result"):
        BestExporter("x", _receiver(), compare_fn=lambda a, b: True)
    BestExporter("x", _receiver(), compare_fn=lambda best_eval_result, current_eval_result: True)
    with pytest.raises(ValueError, match="mode must be one of"):
        BestExporter("x", _receiver(), mode="biggest")
    with pytest.raises(ValueError, match="min_delta"):
        BestExporter("x", _receiver(), min_delta=-1)


def test_mode_auto() -> None:
    assert resolve_mode("loss", "auto") == "min"
    assert resolve_mode("average_loss", "auto") == "min"
    assert resolve_mode("auc", "auto") == "max"
    assert resolve_mode("accuracy", "auto") == "max"
    assert resolve_mode("metrics/recall", "auto") == "max"
    assert resolve_mode("auc", "min") == "min"


def test_latest_keeps_n_newest_and_never_touches_foreign_dirs(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path, export_logs: Callable[[], list[str]]
) -> None:
    foreign = ["1000000000", "123", "temp-1700000000", ".meta"]
    for name in foreign:
        (tmp_path / name).mkdir()
    latest = LatestExporter("latest", _receiver(), exports_to_keep=2, **FAST)
    paths = [
        latest.export(classifier, str(tmp_path), checkpoints[10], {"global_step": 10}, False)
        for _ in range(5)
    ]
    assert all(isinstance(p, str) for p in paths)
    ours = [n for n in numeric_dirs(tmp_path) if n not in foreign]
    assert ours == [_exported(p).name for p in paths[-2:]]
    assert all((tmp_path / name).exists() for name in foreign)
    assert [d.line for d in latest.decisions][0] == f"exported {_exported(paths[0]).name} at step 10"
    assert sum("removed" in line for line in export_logs()) == 3


def test_export_uses_the_evaluated_checkpoint_not_the_latest(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    latest = LatestExporter("latest", _receiver(), **FAST)
    path = latest.export(classifier, str(tmp_path), checkpoints[5], {"global_step": 5}, False)
    meta = json.loads((_exported(path) / "assets.extra" / "tfship.json").read_text())
    assert meta["global_step"] == 5 and meta["checkpoint"] == checkpoints[5]


def test_final_exports_only_on_the_final_evaluation(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    final = FinalExporter("final", _receiver(), **FAST)
    assert final.export(classifier, str(tmp_path), checkpoints[5], {"global_step": 5}, False) is None
    assert numeric_dirs(tmp_path) == []
    path = final.export(classifier, str(tmp_path), checkpoints[10], {"global_step": 10}, True)
    assert numeric_dirs(tmp_path) == [_exported(path).name]
    assert final.decisions[0].line == "skipped: step 5 is not the final evaluation"


def test_final_export_without_max_steps_is_idempotent(tmp_path: Path) -> None:
    est = make_classifier(tmp_path / "m")
    est.train(input_fn, steps=3)  # no max_steps: train_and_evaluate would never call it final
    final = FinalExporter("final", _receiver(), **FAST)
    first = final.export_final(est)
    assert first is not None and Path(first).parent == tmp_path / "m" / "export" / "final"
    assert final.export_final(est) is None
    assert final.decisions[-1].line == f"skipped: step 3 already exported as {Path(first).name}"


def test_best_exports_only_improvements_and_logs_each_decision(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path, export_logs: Callable[[], list[str]]
) -> None:
    best = BestExporter("best", _receiver(), metric="auc", exports_to_keep=None, **FAST)
    results = _evals(best, classifier, tmp_path, checkpoints[10], [0.905, 0.889, 0.912])
    assert [r is not None for r in results] == [True, False, True]
    v1, v3 = Path(results[0]).name, Path(results[2]).name
    assert [d.line for d in best.decisions] == [
        f"exported {v1}: auc 0.905 (first best) at step 10",
        "skipped: auc 0.889 <= best 0.905 at step 11",
        f"exported {v3}: auc 0.912 > 0.905 at step 12",
    ]
    assert f"best: exported {v3}: auc 0.912 > 0.905 at step 12" in export_logs()
    record = json.loads((tmp_path / "tfship-best.json").read_text())
    assert record["value"] == 0.912 and record["version"] == int(v3) and record["global_step"] == 10
    assert record["checkpoint"] == checkpoints[10]


def test_restart_then_worse_eval_exports_nothing(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    # tensorflow/tensorflow#47396: the first call in a new process always exported.
    first_run = BestExporter("best", _receiver(), exports_to_keep=1, metric="loss", **FAST)
    _evals(first_run, classifier, tmp_path, checkpoints[10], [0.5, 0.438], metric="loss")
    restarted = BestExporter("best", _receiver(), exports_to_keep=1, metric="loss", **FAST)
    assert (
        _evals(restarted, classifier, tmp_path, checkpoints[10], [0.9, 0.7, 0.45], metric="loss")
        == [None] * 3
    )
    assert restarted.decisions[0].line == "skipped: loss 0.9 >= best 0.438 at step 10"
    assert len(numeric_dirs(tmp_path)) == 1


def test_best_record_is_recovered_from_version_metadata(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    _evals(
        BestExporter("best", _receiver(), metric="auc", **FAST), classifier, tmp_path, checkpoints[10], [0.8]
    )
    (tmp_path / "tfship-best.json").unlink()
    again = BestExporter("best", _receiver(), metric="auc", **FAST)
    assert _evals(again, classifier, tmp_path, checkpoints[10], [0.7]) == [None]
    assert again.best_record(tmp_path)["value"] == 0.8  # type: ignore[index]


def test_nan_first_eval_does_not_block_later_exports(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    best = BestExporter("best", _receiver(), metric="loss", **FAST)
    results = _evals(
        best, classifier, tmp_path, checkpoints[10], [math.nan, math.inf, 0.7, 0.6], metric="loss"
    )
    assert [r is not None for r in results] == [False, False, True, True]
    assert best.decisions[0].line == "skipped: loss nan is not finite and never becomes best at step 10"


def auc_bigger(best_eval_result: dict[str, float], current_eval_result: dict[str, float]) -> bool:
    return current_eval_result["auc"] > best_eval_result["auc"]


def test_a_compare_fn_decision_is_logged_and_recorded_as_the_compare_fn_s(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path, export_logs: Callable[[], list[str]]
) -> None:
    best = BestExporter("best", _receiver(), compare_fn=auc_bigger, exports_to_keep=None, **FAST)
    evals = [{"loss": 0.44, "auc": 0.8}, {"loss": 0.3879, "auc": 0.78}, {"loss": 0.5, "auc": 0.9}]
    paths = [
        best.export(classifier, str(tmp_path), checkpoints[10], {**e, "global_step": 10 + i}, False)
        for i, e in enumerate(evals)
    ]
    assert [p is not None for p in paths] == [True, False, True]
    v1, v3 = _exported(paths[0]).name, _exported(paths[2]).name
    assert [d.line for d in best.decisions] == [
        f"exported {v1}: first best for compare_fn auc_bigger at step 10",
        f"skipped: compare_fn auc_bigger rejects auc 0.78 over best {v1} with auc 0.8 at step 11",
        f"exported {v3}: compare_fn auc_bigger prefers auc 0.9 over best {v1} with auc 0.8 at step 12",
    ]
    assert not any("loss" in line for line in export_logs())
    record = json.loads((tmp_path / "tfship-best.json").read_text())
    assert record["compare_fn"] == "auc_bigger" and "metric" not in record and "value" not in record
    assert record["compared"] == ["auc"]
    assert record["metrics"] == {"loss": 0.5, "auc": 0.9, "global_step": 12}
    assert record["version"] == int(v3)
    meta = json.loads((_exported(paths[2]) / "assets.extra" / "tfship.json").read_text())
    assert meta["exporter"]["compare_fn"] == "auc_bigger" and "metric" not in meta["exporter"]
    assert meta["exporter"]["compared"] == ["auc"]
    previous = {"version": int(v1), "metrics": {"auc": 0.8, "loss": 0.44, "global_step": 10}}
    assert meta["exporter"]["previous_best"] == previous
    # A restarted run hands the recorded metrics to compare_fn, as tf.estimator's would.
    again = BestExporter("best", _receiver(), compare_fn=auc_bigger, **FAST)
    assert again.export(classifier, str(tmp_path), checkpoints[10], {"loss": 0.1, "auc": 0.85}, False) is None
    assert again.decisions[0].line == (
        f"skipped: compare_fn auc_bigger rejects auc 0.85 over best {v3} with auc 0.9 at step 10"
    )
    # A best chosen by compare_fn is no best by loss, and the other way round.
    assert BestExporter("best", _receiver(), **FAST).best_record(tmp_path) is None


def test_keep_n_under_a_compare_fn_keeps_its_newest_bests_not_the_best_by_metric(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    # Each export was preferred by compare_fn over the best before it, so its newest are its
    # best (tf.estimator keeps the newest); the unused metric (auc here) ranks nothing.
    best = BestExporter(
        "best",
        _receiver(),
        metric="auc",
        exports_to_keep=2,
        compare_fn=lambda best_eval_result, current_eval_result: True,
        **FAST,
    )
    paths = _evals(best, classifier, tmp_path, checkpoints[10], [0.9, 0.95, 0.5, 0.6, 0.7])
    names = [Path(p).name for p in paths]
    assert numeric_dirs(tmp_path) == sorted(names[3:])


def test_keep_one_best_leaves_exactly_the_best(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    # tensorflow/tensorflow#25899: "why are there N models in best_exporter?"
    best = BestExporter("best", _receiver(), exports_to_keep=1, metric="auc", **FAST)
    paths = _evals(best, classifier, tmp_path, checkpoints[10], [0.7, 0.8, 0.75, 0.9])
    assert numeric_dirs(tmp_path) == [Path(paths[3]).name]


def test_min_delta(classifier: Any, checkpoints: dict[int, str], tmp_path: Path) -> None:
    best = BestExporter("best", _receiver(), metric="loss", min_delta=0.05, **FAST)
    results = _evals(best, classifier, tmp_path, checkpoints[10], [0.5, 0.47, 0.4], metric="loss")
    assert [r is not None for r in results] == [True, False, True]
    assert best.decisions[1].line == "skipped: loss 0.47 does not beat best 0.5 by min_delta 0.05 at step 11"


def test_missing_metric_lists_the_metrics_that_exist(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    best = BestExporter("best", _receiver(), metric="auc", **FAST)
    with pytest.raises(
        MetricNotFoundError, match="metric 'auc' not found.*metrics that exist: accuracy, loss"
    ):
        best.export(
            classifier,
            str(tmp_path),
            checkpoints[10],
            {"loss": 1.0, "accuracy": 0.5, "global_step": 1},
            False,
        )


def test_changing_the_metric_starts_afresh(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    _evals(
        BestExporter("best", _receiver(), metric="auc", **FAST), classifier, tmp_path, checkpoints[10], [0.9]
    )
    by_loss = BestExporter("best", _receiver(), metric="loss", **FAST)
    assert by_loss.best_record(tmp_path) is None


@pytest.mark.slow
def test_train_and_evaluate_with_a_named_eval(tmp_path: Path) -> None:
    from tensorflow_estimator import estimator as est_mod

    est = make_classifier(tmp_path / "m")
    best = BestExporter("best", _receiver(), metric="loss")
    latest = LatestExporter("latest", _receiver(), exports_to_keep=1)
    final = FinalExporter("final", _receiver())
    eval_spec = est_mod.EvalSpec(
        input_fn,
        steps=1,
        name="holdout",
        exporters=[best, latest, final],
        start_delay_secs=0,
        throttle_secs=0,
    )
    _, exports = est_mod.train_and_evaluate(est, est_mod.TrainSpec(input_fn, max_steps=10), eval_spec)
    export_root = tmp_path / "m" / "export"
    assert sorted(p.name for p in export_root.iterdir()) == ["best", "final", "latest"]
    assert len(numeric_dirs(export_root / "final")) == 1 and len(numeric_dirs(export_root / "latest")) == 1
    assert exports[1] == str(export_root / "latest" / numeric_dirs(export_root / "latest")[0])
    history = read_eval_history(tmp_path / "m")
    assert [r.step for r in history] == [5, 10] and history[0].eval_dir == "eval_holdout"
    ckpt, record = best_checkpoint(tmp_path / "m", "loss", "min")
    assert record.metrics["loss"] == min(r.metrics["loss"] for r in history)
    assert ckpt.endswith(f"model.ckpt-{record.step}")
    record_file = json.loads((export_root / "best" / "tfship-best.json").read_text())
    assert record_file["global_step"] == record.step


def test_standard_exporters_and_final_exports_after_training(tmp_path: Path) -> None:
    from tfship.exporters import Receiver, run_final_exports
    from tfship.exporters._shared import standard_exporters

    made = standard_exporters(parse_spec(), ["final", "best"], receiver="both", metric="auc", verify=False)
    assert [(type(e).__name__, e.name) for e in made] == [
        ("BestExporter", "best"),
        ("FinalExporter", "final"),
    ]
    receiver = made[0].receiver
    assert made[0].mode == "max" and isinstance(receiver, Receiver) and receiver.kind == "both"
    with pytest.raises(ValueError, match="unknown export kinds"):
        standard_exporters(parse_spec(), ["newest"])
    est = make_classifier(tmp_path / "m")
    est.train(input_fn, steps=2)
    (path,) = run_final_exports(est, made)
    assert Path(path).parent == tmp_path / "m" / "export" / "final"
    assert run_final_exports(est, made) == []


def test_a_record_left_behind_by_a_crash_is_reconciled_with_the_versions(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    first = BestExporter("best", _receiver(), metric="auc", exports_to_keep=None, **FAST)
    _evals(first, classifier, tmp_path, checkpoints[10], [0.8])
    stale = (tmp_path / "tfship-best.json").read_text()
    _evals(first, classifier, tmp_path, checkpoints[10], [0.9])
    (tmp_path / "tfship-best.json").write_text(stale)  # as if killed before the record was rewritten
    restarted = BestExporter("best", _receiver(), metric="auc", exports_to_keep=None, **FAST)
    assert _evals(restarted, classifier, tmp_path, checkpoints[10], [0.85]) == [None]
    assert restarted.decisions[0].line == "skipped: auc 0.85 <= best 0.9 at step 10"


def _loss_smaller(best_eval_result: dict[str, float], current_eval_result: dict[str, float]) -> bool:
    return current_eval_result.get("loss", 0.0) < best_eval_result.get("loss", 0.0)


@pytest.mark.slow
def test_event_file_pattern_seeds_the_best_from_earlier_evaluations_of_a_named_eval(tmp_path: Path) -> None:
    from tensorflow_estimator import estimator as est_mod

    est = make_classifier(tmp_path / "m")
    eval_spec = est_mod.EvalSpec(input_fn, steps=1, name="holdout", start_delay_secs=0, throttle_secs=0)
    est_mod.train_and_evaluate(est, est_mod.TrainSpec(input_fn, max_steps=10), eval_spec)
    history = read_eval_history(tmp_path / "m", "holdout")
    assert [r.step for r in history] == [5, 10]
    best_past = history[0].metrics["loss"]
    base = tmp_path / "m" / "export" / "best"
    ckpt = est.latest_checkpoint()
    seeded = BestExporter("best", _receiver(), "eval_holdout/*.tfevents.*", metric="loss", **FAST)
    worse = {"loss": best_past + 1.0, "global_step": 10}
    assert seeded.export(est, str(base), ckpt, worse, False) is None
    assert (
        seeded.decisions[0].line == f"skipped: loss {best_past + 1.0:.6g} >= best {best_past:.6g} at step 10"
    )
    better = {"loss": best_past / 2, "global_step": 10}
    assert seeded.export(est, str(base), ckpt, better, False) is not None
    by_fn = BestExporter("fn", _receiver(), "eval_holdout/*.tfevents.*", compare_fn=_loss_smaller, **FAST)
    assert by_fn.export(est, str(tmp_path / "fn"), ckpt, worse, False) is None
    assert by_fn.decisions[0].line == (
        f"skipped: compare_fn _loss_smaller rejects loss {best_past + 1.0:.6g} over the best at "
        f"step {history[0].step} with loss {best_past:.6g} at step 10"
    )
    unseeded = BestExporter("other", _receiver(), metric="loss", **FAST)
    assert unseeded.export(est, str(tmp_path / "other"), ckpt, worse, False) is not None
    with pytest.raises(ValueError, match="event_file_pattern must be"):
        BestExporter("x", _receiver(), event_file_pattern=3)  # type: ignore[arg-type]


def test_step_versions_skip_a_step_already_exported(
    classifier: Any, checkpoints: dict[int, str], tmp_path: Path
) -> None:
    latest = LatestExporter("latest", _receiver(), version_by="step", **FAST)
    first = latest.export(classifier, str(tmp_path), checkpoints[5], {"global_step": 5}, False)
    assert first is not None and Path(first).name == "5"
    assert latest.export(classifier, str(tmp_path), checkpoints[5], {"global_step": 5}, False) is None
    assert latest.decisions[-1].line == "skipped: version 5 already exists"


def test_exporter_classes_are_estimator_exporters() -> None:
    from tensorflow_estimator import estimator

    import tfship.exporters as exporters

    for name in ("BestExporter", "FinalExporter", "LatestExporter"):
        cls = getattr(exporters, name)
        assert issubclass(cls, estimator.Exporter)
        assert cls.__name__ == name and cls.__module__ == "tfship.exporters"
