"""``tfship serve``: a local server that answers TensorFlow Serving's gRPC and REST API.

It loads the versions of each model from a base path (or a ``ModelServerConfig`` file) the
way TF Serving's version policy does, reloads when versions appear or disappear, replays
warmup records, batches requests when asked, and answers Predict, Classify, Regress,
MultiInference, GetModelMetadata, GetModelStatus and HandleReloadConfigRequest with TF
Serving's status codes and messages. Importing this package does not import TensorFlow.

Example:
    >>> from tfship.server import ModelServer
    >>> with ModelServer(model_base_path="model/export/best", model_name="penguins",
    ...                  port=0, rest_port=0) as server:  # doctest: +SKIP
    ...     print(server.address, server.rest_url)
"""

from __future__ import annotations

from tfship.server._config import ModelConfig, VersionPolicy
from tfship.server._manager import StateEvent
from tfship.server._server import BatchingOptions, ModelServer
from tfship.server._status import LocalServerError, ServerConfigError

__all__ = [
    "BatchingOptions",
    "LocalServerError",
    "ModelConfig",
    "ModelServer",
    "ServerConfigError",
    "StateEvent",
    "VersionPolicy",
]
