"""The REST API with plain HTTP (urllib), as curl or requests users call TF Serving."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tfship.server import ModelServer, ServerOptions

pytestmark = pytest.mark.slow


def call(server: ModelServer, method: str, path: str, body: Any = None) -> tuple[int, str, str]:
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"{server.rest_url}{path}", data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], exc.read().decode()


def error_of(text: str) -> str:
    """Read TF Serving's error body: ``{"error": "<message>"}``, valid JSON, pretty printed."""
    assert text.startswith('{\n    "error": "') and text.endswith('"\n}'), text
    doc = json.loads(text)
    assert list(doc) == ["error"]
    message: str = doc["error"]
    return message


def ok(server: ModelServer, method: str, path: str, body: Any = None) -> Any:
    status, content_type, text = call(server, method, path, body)
    assert status == 200, text
    assert content_type == "application/json"
    return json.loads(text)


def fails(server: ModelServer, path: str, body: Any, status: int, message: str | None) -> str:
    got, content_type, text = call(server, "POST" if body is not None else "GET", path, body)
    assert (got, content_type) == (status, "application/json"), text
    error = error_of(text)
    if message is not None:
        assert error == message
    return error


# predict ---------------------------------------------------------------------------------------
def test_row_format_with_several_outputs(server: ModelServer) -> None:
    out = ok(server, "POST", "/v1/models/module:predict", {"instances": [[1, 2], [3, 4]]})
    assert out == {"predictions": [{"doubled": [2.0, 4.0], "y": [7.0]}, {"doubled": [6.0, 8.0], "y": [13.0]}]}


def test_columnar_format_and_version_path(server: ModelServer) -> None:
    out = ok(server, "POST", "/v1/models/module/versions/1:predict", {"inputs": [[1.5, 0]]})
    assert out == {"outputs": {"doubled": [[3.0, 0.0]], "y": [[2.5]]}}


def test_label_path_and_case_insensitive_route(server: ModelServer) -> None:
    out = ok(server, "POST", "/V1/MODELS/module/labels/stable:PREDICT", {"inputs": [[0, 0]]})
    assert out["outputs"]["y"] == [[1.0]]


def test_named_instances_bytes_suffix_and_b64_input(server: ModelServer) -> None:
    body = {"signature_name": "strings", "instances": ["ab", {"b64": "Y2Q="}]}
    out = ok(server, "POST", "/v1/models/module:predict", body)
    assert out["predictions"] == [
        {"length": 2, "upper": "AB", "upper_bytes": {"b64": "QUI="}},
        {"length": 2, "upper": "CD", "upper_bytes": {"b64": "Q0Q="}},
    ]


def test_object_instances_for_several_inputs(server: ModelServer) -> None:
    body = {"signature_name": "pair", "instances": [{"a": 1.5, "b": 2}, {"a": 0, "b": -1}]}
    assert ok(server, "POST", "/v1/models/module:predict", body) == {"predictions": [3.5, -1.0]}


def test_nan_and_infinity_round_trip(server: ModelServer) -> None:
    status, _, text = call(server, "POST", "/v1/models/module:predict", b'{"inputs": [[NaN, Infinity]]}')
    assert status == 200
    # byte for byte as TF Serving's PrettyWriter: columnar arrays one value per line
    assert text == (
        '{\n    "outputs": {\n        "doubled": [\n            [\n                NaN,\n'
        '                Infinity\n            ]\n        ],\n        "y": [\n            [\n'
        "                NaN\n            ]\n        ]\n    }\n}"
    )


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"foo": 1}, 400, "Missing 'inputs' or 'instances' key"),
        ({"instances": []}, 400, "JSON Value: {\n    \"instances\": []\n} No values in 'instances' array"),
        (
            {"signature_name": "nope", "inputs": [[1, 2]]},
            400,
            'Serving signature name: "nope" not found in signature def',
        ),
        ({"signature_name": 3, "inputs": [1]}, 400, None),
        (
            {"signature_name": "pair", "instances": [{"a": 1.0, "b": 2.5}]},
            400,
            "Failed to process element: 0 key: b of 'instances' list. Error: INVALID_ARGUMENT: "
            "JSON Value: 2.5 Type: Number is not of expected type: int64",
        ),
        (
            {"signature_name": "pair", "instances": [1.0]},
            400,
            "instances is a plain list, but expecting list of objects as multiple input tensors "
            "required as per tensorinfo_map",
        ),
        ({"instances": [[1, 2], [3]]}, 400, None),
        ({"inputs": [[1, 2]], "instances": [[1, 2]]}, 400, None),
    ],
)
def test_predict_body_errors(server: ModelServer, body: Any, status: int, message: str | None) -> None:
    fails(server, "/v1/models/module:predict", body, status, message)


def test_unparsable_and_empty_bodies_are_400(server: ModelServer) -> None:
    error = fails(server, "/v1/models/module:predict", b"{bad", 400, None)
    assert error.startswith("JSON Parse error: ")
    fails(server, "/v1/models/module:predict", b"", 400, "JSON Parse error: The document is empty")
    fails(server, "/v1/models/module:predict", b"\xff\xfe", 400, None)


def test_unknown_model_is_404(server: ModelServer) -> None:
    fails(
        server,
        "/v1/models/nope:predict",
        {"instances": [1]},
        404,
        "Servable not found for request: Latest(nope)",
    )


def test_dtype_error_from_the_model_is_400(server: ModelServer) -> None:
    error = fails(server, "/v1/models/module:predict", {"inputs": [[1, 2, 3]]}, 400, None)
    assert error


# classify / regress ----------------------------------------------------------------------------
def test_classify_results_key(server: ModelServer) -> None:
    out = ok(server, "POST", "/v1/models/linear:classify", {"examples": [{"x": 0.5}, {"x": 2.5}]})
    assert len(out["results"]) == 2
    for row in out["results"]:
        assert [label for label, _ in row] == ["0", "1"]
        assert sum(score for _, score in row) == pytest.approx(1.0, abs=1e-5)


def test_regress_with_context(server: ModelServer) -> None:
    body = {"signature_name": "regression", "context": {"x": 2.5}, "examples": [{}, {}]}
    out = ok(server, "POST", "/v1/models/linear:regress", body)
    plain = ok(server, "POST", "/v1/models/linear:classify", {"examples": [{"x": 2.5}]})
    assert out["results"] == pytest.approx([plain["results"][0][1][1]] * 2, abs=1e-5)


def test_classify_without_examples(server: ModelServer) -> None:
    error = fails(server, "/v1/models/linear:regress", {"context": {}}, 400, None)
    assert error.endswith("When method is classify, key 'examples' is expected and was not found")


# status and metadata ---------------------------------------------------------------------------
def test_status_json(server: ModelServer) -> None:
    out = ok(server, "GET", "/v1/models/module/versions/1")
    assert out == {
        "model_version_status": [
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }
    assert [v["version"] for v in ok(server, "GET", "/v1/models/module")["model_version_status"]] == [
        "2",
        "1",
    ]


def test_metadata_json_has_the_doubled_key(server: ModelServer) -> None:
    out = ok(server, "GET", "/v1/models/module/metadata")
    assert out["model_spec"] == {"name": "module", "signature_name": "", "version": "2"}
    signatures = out["metadata"]["signature_def"]["signature_def"]
    assert "__saved_model_init_op" in signatures
    assert signatures["serving_default"]["inputs"]["x"]["dtype"] == "DT_FLOAT"


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        # GET /v1/models lists the models (tfship's extension; TF Serving answers 400 there)
        ("POST", "/v1/models", 400, "Malformed request: POST /v1/models"),
        ("GET", "/v1/models/module:predict", 400, "Malformed request: GET /v1/models/module:predict"),
        ("DELETE", "/v1/models/module", 400, "Malformed request: DELETE /v1/models/module"),
        ("GET", "/v1/models/nope", 404, "Could not find any versions of model nope"),
    ],
)
def test_route_errors(server: ModelServer, method: str, path: str, status: int, message: str) -> None:
    got, content_type, text = call(server, method, path)
    assert (got, content_type) == (status, "application/json")
    assert error_of(text) == message


def test_paths_outside_v1_are_404(server: ModelServer) -> None:
    assert call(server, "GET", "/healthz")[0] == 404


def test_error_with_a_quote_is_valid_json(server: ModelServer) -> None:
    # every "input 'x'" style message: the body must still parse
    status, _, text = call(
        server,
        "POST",
        "/v1/models/module:predict",
        {"signature_name": 'it\'s "quoted"\n', "inputs": [[1, 2]]},
    )
    assert status == 400
    assert json.loads(text) == {
        "error": 'Serving signature name: "it\'s "quoted"\n" not found in signature def'
    }


def test_deeply_nested_json_is_400(server: ModelServer) -> None:
    body = b'{"inputs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, _, text = call(server, "POST", "/v1/models/module:predict", body)
    assert status == 400, text


def test_rest_runs_past_the_timeout_are_504(module_base: Any) -> None:
    from tfship.server import ModelConfig

    models = [ModelConfig("module", str(module_base))]
    with ModelServer(models, ServerOptions(port=0, rest_port=0, rest_timeout_s=1e-6)) as slow:
        fails(
            slow, "/v1/models/module:predict", {"inputs": [[1, 2]]}, 504, "Timed out waiting for notification"
        )
        assert ok(slow, "GET", "/v1/models/module")  # status is not a model run
