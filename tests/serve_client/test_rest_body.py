"""The REST client writes a Predict's JSON body from the checked arrays; the body is the one
the TensorProto path wrote (inputs encoded to TensorProtos, decoded back, then written), for
every dtype REST carries.

A client without checks (``validate=False``) still takes that path, so both bodies are
captured by a real HTTP server, byte for byte, and compared.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from tfship.serve_client import RestServingClient

# input key -> (TF Serving's dtype name, the array sent): edges of each dtype's JSON rules
ARRAYS: dict[str, tuple[str, Any]] = {
    "f32": ("DT_FLOAT", np.array([[0.1, 1e-8, 3.4e38, -0.0, 1.0, 16777217.0]], np.float32)),
    "f32_odd": ("DT_FLOAT", np.array([0.1234567, 1 / 3, 2.5e-45], np.float32)),
    "f64": ("DT_DOUBLE", np.array([[0.1, 1 / 3, 1e300, -2.5]], np.float64)),
    "i32": ("DT_INT32", np.array([[-(2**31), 0, 2**31 - 1]], np.int32)),
    "i64": ("DT_INT64", np.array([2**62 + 1, -(2**63), 7], np.int64)),
    "u8": ("DT_UINT8", np.array([[0, 255]], np.uint8)),
    "i16": ("DT_INT16", np.array([-(2**15), 2**15 - 1], np.int16)),
    "flag": ("DT_BOOL", np.array([[True, False]])),
    "text": ("DT_STRING", np.array([["penguin", "été", ""]], dtype=object)),
    "raw": ("DT_STRING", np.array([b"\xff\x00binary", b"plain"], dtype=object)),
    "scalar": ("DT_FLOAT", np.float32(2.5)),
}
NOT_FINITE = {"f": ("DT_FLOAT", np.array([np.nan, np.inf, -np.inf, 1.5], np.float32))}


def _metadata(arrays: dict[str, tuple[str, Any]]) -> bytes:
    unknown = {"unknown_rank": True}
    signature = {
        "method_name": "tensorflow/serving/predict",
        "inputs": {k: {"dtype": dtype, "tensor_shape": unknown} for k, (dtype, _) in arrays.items()},
        "outputs": {"y": {"dtype": "DT_FLOAT", "tensor_shape": unknown}},
    }
    doc = {
        "model_spec": {"name": "m", "version": "1"},
        "metadata": {"signature_def": {"signature_def": {"serving_default": signature}}},
    }
    return json.dumps(doc).encode()


class _Recorder(ThreadingHTTPServer):
    bodies: list[bytes]
    metadata: bytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Recorder

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._answer(self.server.metadata)

    def do_POST(self) -> None:  # noqa: N802
        self.server.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self._answer(b'{"outputs": [0.5]}')

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    httpd = _Recorder(("127.0.0.1", 0), _Handler)
    httpd.bodies = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def _as_written(body: bytes) -> Any:
    """A body's JSON with every number as the text written (the order of inputs aside: the
    TensorProto path wrote them in the order of the request's map)."""
    return json.loads(
        body,
        parse_float=str,
        parse_int=str,
        parse_constant=str,
        object_pairs_hook=lambda pairs: dict(sorted(pairs)),
    )


def _bodies(recorder: _Recorder, arrays: dict[str, tuple[str, Any]]) -> tuple[bytes, bytes]:
    """(the body written from the checked arrays, the body of the TensorProto path)."""
    recorder.metadata, recorder.bodies = _metadata(arrays), []
    url = f"http://127.0.0.1:{recorder.server_address[1]}"
    inputs = {key: value for key, (_, value) in arrays.items()}
    for validate in (True, False):
        with RestServingClient(url, validate=validate) as client:
            assert client.predict("m", inputs).as_numpy("y").tolist() == [0.5]
    checked, through_protos = recorder.bodies
    return checked, through_protos


@pytest.mark.parametrize("arrays", [ARRAYS, NOT_FINITE], ids=["every dtype", "NaN and infinities"])
def test_the_body_from_checked_arrays_is_the_tensorproto_paths(
    recorder: _Recorder, arrays: dict[str, tuple[str, Any]]
) -> None:
    checked, through_protos = _bodies(recorder, arrays)
    assert _as_written(checked) == _as_written(through_protos)


def test_the_body_keeps_each_dtypes_json_rules(recorder: _Recorder) -> None:
    checked, _ = _bodies(recorder, ARRAYS)
    inputs = json.loads(checked)["inputs"]
    assert inputs["f32"] == [[0.1, 1e-8, 3.4e38, -0.0, 1.0, 16777216.0]]  # float32's shortest text
    assert np.array_equal(np.array(inputs["f32_odd"], np.float32), ARRAYS["f32_odd"][1])
    assert inputs["i64"] == [2**62 + 1, -(2**63), 7]  # exact, never through a float
    assert inputs["flag"] == [[True, False]]
    assert inputs["text"] == [["penguin", "été", ""]]
    assert inputs["raw"] == [{"b64": "/wBiaW5hcnk="}, "plain"]  # bytes that are not UTF-8
    assert inputs["scalar"] == 2.5  # a scalar, not a list of one
    nan_body = _bodies(recorder, NOT_FINITE)[0]  # NaN and infinities as TF Serving reads them
    assert b"[NaN, Infinity, -Infinity, 1.5]" in nan_body
