"""What other tfship packages need of ``loaders`` and a user does not: its door to them.

The serving path of ``tfship serve``: a run on feeds the server has already checked in TF
Serving's words, a run bound once to one signature and its outputs, and the one call that
feeds graph tensors by name. A module of another package calls these here, never the
``LocalModel`` methods behind them; none of them is public API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfship.inspect import TensorInfo
    from tfship.loaders._model import Array, LocalModel

__all__ = ["checked_runner", "run_checked", "run_tensors"]


def run_checked(
    model: LocalModel, feeds: Mapping[str, Array], signature: str, outputs: Sequence[str]
) -> dict[str, Array]:
    """Run ``signature`` on feeds its caller checked, in the caller's thread: the server's path.

    ``feeds`` holds one numpy array of the input's dtype per dense input (inputs with a default
    included) and ``outputs`` output keys of the signature; what a caller did not check (a
    sparse input, an unknown key) is checked as ``LocalModel.run`` checks it.
    """
    return model._run_checked(feeds, signature, outputs)


def checked_runner(
    model: LocalModel, signature: str, outputs: Sequence[str]
) -> Callable[[Mapping[str, Array]], list[Any]] | None:
    """:func:`run_checked` bound to one signature and its outputs (the values in the order of
    ``outputs``); None when a run must go through :func:`run_checked`, which says what is wrong."""
    return model._checked_runner(signature, outputs)


def run_tensors(
    model: LocalModel,
    feed_names: Sequence[str],
    feed_values: Sequence[Array],
    fetch_infos: Sequence[TensorInfo],
    fetch_keys: Sequence[str],
) -> dict[str, Array]:
    """Feed graph tensors by name and fetch signature outputs: the one call into TensorFlow."""
    return model._run_tensors(feed_names, feed_values, fetch_infos, fetch_keys)
