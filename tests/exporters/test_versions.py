"""Version numbering: strictly increasing, never below the clock, blind to non-numeric names."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tfship.exporters._publish import next_version, version_numbers


@settings(max_examples=40, deadline=None)
@given(
    existing=st.lists(st.integers(min_value=0, max_value=3_000_000_000), max_size=5, unique=True),
    now=st.floats(min_value=0, max_value=3_000_000_000, allow_nan=False),
)
def test_next_version_is_above_every_version_and_not_below_now(existing: list[int], now: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for n in existing:
            (base / str(n)).mkdir()
        (base / "temp-9999999999").mkdir()
        (base / ".tfship-staging-9999999999-1").mkdir()
        (base / "9999999999.txt").write_text("a file, not a version")
        assert version_numbers(base) == sorted(existing)
        version = next_version(base, now=now)
        assert version >= int(now)
        assert all(version > n for n in existing)
        assert version == max([int(now), *(n + 1 for n in existing)])
