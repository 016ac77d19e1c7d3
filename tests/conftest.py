"""Session-wide fixtures shared by every test package."""

from __future__ import annotations

import os

import pytest

_PROXY_VARS = ("grpc_proxy", "https_proxy", "http_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    # gRPC and urllib honour proxy variables; loopback tests must never go through one.
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
