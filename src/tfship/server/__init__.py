"""``tfship serve``: a local server that answers TensorFlow Serving's gRPC and REST API.

It loads the versions of each model from a base path (or a ``ModelServerConfig`` file) the
way TF Serving's version policy does, reloads when versions appear or disappear, replays
warmup records, batches requests when asked, and answers Predict, Classify, Regress,
MultiInference, GetModelMetadata, GetModelStatus and HandleReloadConfigRequest with TF
Serving's status codes and messages. ``read_config_file`` reads TF Serving's
``--model_config_file`` into ``ModelConfig`` s; ``ServerOptions(tls=SslConfig(...))`` serves gRPC
over TLS. Importing this package does not import TensorFlow.

Example:
    >>> import tensorflow as tf
    >>> m = tf.Module()
    >>> m.f = tf.function(lambda x: {"y": 2 * x}, [tf.TensorSpec([None, 3], name="x")], autograph=False)
    >>> tf.saved_model.save(m, "m/1", signatures=m.f)
    >>> from tfship.server import ModelServer, ServerOptions
    >>> options = ServerOptions(port=0, rest_port=0)
    >>> with ModelServer.from_base_path("m", "m", options=options) as server:
    ...     print(server.address, server.rest_url)  # ports chosen by the system
    127.0.0.1:... http://127.0.0.1:...
"""

from __future__ import annotations

from tfship._tf import require_extra as _require_extra

_require_extra(__name__)  # one line naming the run extra, before a submodule fails to import TensorFlow

from tfship.server._config import ModelConfig, SslConfig, VersionPolicy, read_config_file
from tfship.server._manager import StateEvent
from tfship.server._request_log import RequestLogOptions
from tfship.server._server import BatchingOptions, ModelServer, ServerOptions
from tfship.server._status import LocalServerError, ServerConfigError

__all__ = [
    "BatchingOptions",
    "LocalServerError",
    "ModelConfig",
    "ModelServer",
    "RequestLogOptions",
    "ServerConfigError",
    "ServerOptions",
    "SslConfig",
    "StateEvent",
    "VersionPolicy",
    "read_config_file",
]
