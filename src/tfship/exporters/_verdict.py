"""How ``BestExporter`` judges an evaluation against the best so far, and says why.

The verdict and the metrics it compared, the evaluation handed to a ``compare_fn`` that notes
the metrics the function reads, and the texts of the log lines that name them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from tfship.exporters._events import fmt

if TYPE_CHECKING:  # what dict's views are called in the type stubs
    from _collections_abc import dict_items, dict_values


def metrics_text(metrics: Mapping[str, Any], names: Iterable[str]) -> str:
    shown = [f"{k} {fmt(number_or_none(metrics.get(k)))}" for k in sorted(names)]
    return ", ".join(shown) or "no metric"


class Verdict(NamedTuple):
    """Whether an evaluation becomes best, the reason for the log, and the metrics compared."""

    better: bool
    why: str
    compared: tuple[str, ...] = ()


class Watched(dict[str, Any]):
    """An evaluation handed to compare_fn that notes the names of the metrics it reads."""

    def __init__(self, metrics: Mapping[str, Any], read: set[str]) -> None:
        super().__init__(metrics)
        self._read = read

    def __getitem__(self, key: str) -> Any:
        self._read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key in self:
            self._read.add(key)
        return super().get(key, default)

    def __iter__(self) -> Iterator[str]:
        self._read.update(super().keys())
        return super().__iter__()

    def values(self) -> dict_values[str, Any]:
        self._read.update(super().keys())
        return super().values()

    def items(self) -> dict_items[str, Any]:
        self._read.update(super().keys())
        return super().items()


def ranking_text(ranking: Mapping[str, Any]) -> str:
    if "compare_fn" in ranking:
        return f"compare_fn {ranking['compare_fn']}"
    if not ranking:
        return "nothing known"
    return f"{ranking.get('metric')} ({ranking.get('mode')})"


def callable_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return str(name) if name else type(fn).__qualname__


def number_or_none(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def check_compare_fn(cls: str, fn: Callable[..., bool]) -> None:
    if not callable(fn):
        raise ValueError(f"{cls}: compare_fn must be callable, got {fn!r}")
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    needed = {"best_eval_result", "current_eval_result"}
    if not needed <= set(params):
        raise ValueError(
            f"{cls}: compare_fn must accept the keyword arguments best_eval_result and "
            f"current_eval_result; it takes {', '.join(params) or 'none'}"
        )
