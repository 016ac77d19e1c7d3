"""Call TensorFlow Serving, and serve a SavedModel locally with the same API.

Importing this package is cheap: the gRPC stubs (which pull in TensorFlow's protos, hence
TensorFlow) load on first use of a name below.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> private module that defines it
_CLIENT_EXPORTS: dict[str, str] = {
    # client side: names defined by _client.py, _codec.py, _errors.py, ...
}
_SERVER_EXPORTS: dict[str, str] = {
    # server side: names defined by _server*.py
}
_EXPORTS = {**_CLIENT_EXPORTS, **_SERVER_EXPORTS}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tfship.serve_client' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tfship.serve_client.{module}"), name)


def __dir__() -> list[str]:
    return __all__
