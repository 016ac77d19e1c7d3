"""Fixtures of the serving-client tests.

* ``model_base``: a TF2 SavedModel under versions 1 and 2. ``serving_default`` computes
  ``y = x @ [[1], [2]] + version`` (so an answer tells which version served it); ``classify``
  and ``regress`` parse serialized ``tf.train.Example``s with a feature ``x`` of two floats;
  ``strings`` upper-cases text.
* ``server``: the local ``tfship serve`` server (gRPC + REST) on 127.0.0.1 with free ports,
  serving ``m`` (all versions, labels stable=1 and canary=2).
* ``custom_server``: ``tfship serve`` serving ``custom``, a custom ``model_fn`` Estimator
  exported with a parsing receiver (one Predict signature taking serialized ``examples``).
* ``ScriptedServer``: a small real gRPC server whose RPCs fail with chosen status codes, can
  go down and come back on the same port, and speaks TLS or listens on a unix socket.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from estimator_lane import build
from tfship.serve_client import ServingClient


@pytest.fixture(scope="session")
def tf() -> Any:
    import tensorflow

    return tensorflow


def export_model(tf: Any, directory: Path, version: int) -> Path:
    """Write version ``version`` of the test model under ``directory``."""
    offset = float(version)
    spec = {"x": tf.io.FixedLenFeature([2], tf.float32)}

    class Model(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable([[1.0], [2.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            return {"y": tf.matmul(x, self.w) + offset, "doubled": x * 2.0}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify(self, inputs: Any) -> dict[str, Any]:
            x = tf.io.parse_example(inputs, spec)["x"]
            logits = tf.concat([x[:, :1], x[:, 1:] + offset], axis=1)
            scores = tf.nn.softmax(logits)
            classes = tf.tile(tf.constant([["neg", "pos"]]), [tf.shape(x)[0], 1])
            return {"scores": scores, "classes": classes}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress(self, inputs: Any) -> dict[str, Any]:
            x = tf.io.parse_example(inputs, spec)["x"]
            return {"outputs": tf.reduce_sum(x, axis=1) + offset}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def strings(self, text: Any) -> dict[str, Any]:
            return {"upper": tf.strings.upper(text), "upper_bytes": tf.strings.upper(text)}

    model = Model()
    path = directory / str(version)
    signatures = {
        "serving_default": model.serve,
        "classify": model.classify,
        "regress": model.regress,
        "strings": model.strings,
    }
    tf.saved_model.save(model, str(path), signatures=signatures)
    return path


@pytest.fixture(scope="session")
def model_base(tf: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("client_model") / "m"
    base.mkdir()
    for version in (1, 2):
        export_model(tf, base, version)
    return base


@pytest.fixture(scope="session")
def server(model_base: Path) -> Iterator[Any]:
    from tfship.server import ModelConfig, ModelServer, ServerOptions, VersionPolicy

    models = [ModelConfig("m", str(model_base), VersionPolicy("all"), {"stable": 1, "canary": 2})]
    srv = ModelServer(models, ServerOptions(port=0, rest_port=0, poll_seconds=0.2))
    srv.start()
    try:
        srv.wait_until_available("m", 2, timeout=60)
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def client(server: Any) -> Iterator[ServingClient]:
    with ServingClient(server.address, timeout=20) as c:
        yield c


# --------------------------------------------------------------------- scripted gRPC server


class ScriptedServer:
    """A real gRPC server on 127.0.0.1 (or a unix socket) answering TF Serving's method paths.

    ``failures`` is a list of (status code, message) popped one per call before answering;
    ``handlers`` maps a method name to a function (request bytes, context) -> response bytes.
    Every call's method, request bytes and invocation metadata are recorded in ``calls``.
    """

    def __init__(self, *, target: str = "127.0.0.1:0", credentials: Any = None) -> None:
        self.failures: list[tuple[grpc.StatusCode, str]] = []
        self.handlers: dict[str, Callable[[bytes, Any], bytes]] = {}
        self.calls: list[tuple[str, bytes, dict[str, str]]] = []
        self.delay = 0.0
        self._lock = threading.Lock()
        self._requested = target
        self._credentials = credentials
        self._server: Any = None
        self.port = 0

    @property
    def address(self) -> str:
        if self._requested.startswith("unix:"):
            return self._requested
        return f"127.0.0.1:{self.port}"

    def start(self) -> ScriptedServer:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers([_Handler(self)])
        target = self._requested if not self.port else f"127.0.0.1:{self.port}"
        if self._credentials is None:
            port = server.add_insecure_port(target)
        else:
            port = server.add_secure_port(target, self._credentials)
        server.start()
        self.port = port
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(None).wait()
            self._server = None

    def answer(self, method: str, request: bytes, context: Any) -> bytes:
        metadata = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
        with self._lock:
            self.calls.append((method, request, metadata))
            failure = self.failures.pop(0) if self.failures else None
        if self.delay:
            threading.Event().wait(self.delay)
        if failure is not None:
            context.abort(failure[0], failure[1])
        handler = self.handlers.get(method)
        if handler is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not scripted")
        assert handler is not None  # context.abort raised above
        return handler(request, context)


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, owner: ScriptedServer) -> None:
        self.owner = owner

    def service(self, details: Any) -> Any:
        method = details.method.rsplit("/", 1)[-1]

        def behaviour(request: bytes, context: Any) -> bytes:
            return self.owner.answer(method, request, context)

        return grpc.unary_unary_rpc_method_handler(behaviour)


def echo_predict(request: bytes, context: Any) -> bytes:
    """Predict that returns its float inputs as typed float_val, like TF Serving does.

    The request is read with TF Serving's classes and TensorFlow's ``make_ndarray``: what
    the client sends must be what TensorFlow reads.
    """
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    req = predict_pb2.PredictRequest.FromString(request)
    resp = predict_pb2.PredictResponse()
    resp.model_spec.name = req.model_spec.name
    resp.model_spec.version.value = 1
    resp.model_spec.signature_name = req.model_spec.signature_name or "serving_default"
    for key, tensor in req.inputs.items():
        array = tf.make_ndarray(tensor).astype(np.float32)
        out = resp.outputs[key]
        out.dtype = 1
        for size in array.shape:
            out.tensor_shape.dim.add(size=size)
        out.float_val.extend(array.ravel().tolist())
    data: bytes = resp.SerializeToString()
    return data


@pytest.fixture()
def scripted() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    srv.handlers["Predict"] = echo_predict
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


# ------------------------------------------------------------- a canned Estimator classifier

CLASSIFIER_SCHEMA = {
    "version": 1,
    "label": {"name": "species", "kind": "multiclass", "vocabulary": ["A", "B", "C"]},
    "features": [
        {"name": "bill", "dtype": "float32", "shape": [], "default": 40.0, "use": {"kind": "numeric"}},
        {
            "name": "island",
            "dtype": "string",
            "shape": [],
            "default": "",
            "use": {"kind": "categorical", "vocabulary": ["Biscoe", "Dream"], "as": "indicator"},
        },
    ],
    "crosses": [],
    "groups": {},
}


@pytest.fixture(scope="session")
def classifier_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LinearClassifier (3 string classes) trained a few steps, exported with a parsing
    receiver: serving_default and classification classify, predict predicts."""
    return Path(build("estimator_builds:string_classifier_base", tmp_path_factory.mktemp("classifier")))


@pytest.fixture(scope="session")
def classifier_server(classifier_base: Path) -> Iterator[Any]:
    """``tfship serve`` serving the classifier as ``penguins``."""
    from tfship.server import ModelServer, ServerOptions

    srv = ModelServer.from_base_path(classifier_base, "penguins", options=ServerOptions(port=0, rest_port=0))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


# ------------------------------------------------- a custom model_fn with a parsing receiver


@pytest.fixture(scope="session")
def custom_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A custom ``model_fn`` Estimator exported with a parsing receiver: one Predict signature
    whose only input is ``examples`` (see ``custom_builds``)."""
    built = build("serve_client/custom_builds:custom_parsing_base", tmp_path_factory.mktemp("custom"))
    return Path(built)


@pytest.fixture(scope="session")
def custom_server(custom_base: Path) -> Iterator[Any]:
    """``tfship serve`` serving the custom export as ``custom``, over gRPC and REST."""
    from tfship.server import ModelServer, ServerOptions

    srv = ModelServer.from_base_path(custom_base, "custom", options=ServerOptions(port=0, rest_port=0))
    srv.start()
    try:
        srv.wait_until_available("custom", 1, timeout=60)
        yield srv
    finally:
        srv.stop()
