"""Fixtures of the serving-client tests: TensorFlow (for oracles) and real servers on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def tf() -> Any:
    from tfship._tf import tf as import_tf

    return import_tf()
