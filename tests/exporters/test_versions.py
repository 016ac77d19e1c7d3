"""Version numbering: strictly increasing, never below the clock, blind to non-numeric names."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from export_helpers import STAGING_PREFIX, parse_spec
from hypothesis import given, settings
from hypothesis import strategies as st

from tfship.exporters import export_model, parsing_receiver, published_versions


def _foreign_entries(base: Path, number: int) -> None:
    """Names TF Serving does not take for versions, each spelling a number above ``number``."""
    (base / f"temp-{number + 1}").mkdir()  # what tf.estimator leaves after a failed export
    (base / f"{STAGING_PREFIX}{number + 2}-1").mkdir()  # ours, of a live process (pid 1)
    (base / f"{number + 3}.txt").write_text("a file, not a version")
    (base / str(number + 4)).write_text("a file named like a version")


@settings(max_examples=40, deadline=None)
@given(existing=st.lists(st.integers(min_value=0, max_value=3_000_000_000), max_size=5, unique=True))
def test_published_versions_are_the_numeric_directories(existing: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for n in existing:
            (base / str(n)).mkdir()
        _foreign_entries(base, 9_999_999_999)
        versions = published_versions(base)
        assert [v.number for v in versions] == sorted(existing)
        assert all(v.path == base / str(v.number) and not v.ours for v in versions)


def test_a_new_version_is_the_clock_second_or_one_above_the_newest(classifier: Any, tmp_path: Path) -> None:
    receiver = parsing_receiver(parse_spec())
    before = int(time.time())
    first = export_model(classifier, tmp_path / "empty", receiver, verify=False).version
    assert before <= first <= int(time.time())
    old = tmp_path / "old"
    (old / "5").mkdir(parents=True)
    assert export_model(classifier, old, receiver, verify=False).version >= before  # the clock wins
    future = before + 10_000  # e.g. a clock that went backwards since
    ahead = tmp_path / "ahead"
    (ahead / str(future)).mkdir(parents=True)
    _foreign_entries(ahead, future)
    assert export_model(classifier, ahead, receiver, verify=False).version == future + 1
