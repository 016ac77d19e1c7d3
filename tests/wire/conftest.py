"""Fixtures of the wire-format tests: TensorFlow itself, as the reference to agree with."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def tf() -> Any:
    from tfship._tf import tf as import_tf

    return import_tf()
