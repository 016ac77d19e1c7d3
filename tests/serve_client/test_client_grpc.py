"""ServingClient against a real local TF Serving-compatible server (tfship serve)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfship.serve_client as errors
from tfship.serve_client import RegressResult, ServingClient, VersionStatus

X = [[1.0, 2.0], [3.0, 4.0]]


def _expected_y(version: int) -> np.ndarray:
    return np.array(X, np.float32) @ np.array([[1.0], [2.0]], np.float32) + version


def test_predict_latest_version(client: ServingClient) -> None:
    result = client.predict("m", {"x": X})
    assert np.allclose(result.as_numpy("y"), _expected_y(2))
    assert np.allclose(result.outputs["doubled"], np.array(X) * 2)
    assert result.outputs["y"].dtype == np.float32
    assert (result.model_spec.name, result.model_spec.version) == ("m", 2)
    assert result.model_spec.signature_name == "serving_default"
    assert result.raw.model_spec.version.value == 2


@pytest.mark.parametrize(
    ("version", "label", "expected"), [(1, None, 1), (None, "stable", 1), (None, "canary", 2), (2, None, 2)]
)
def test_predict_version_and_label(
    client: ServingClient, version: int | None, label: str | None, expected: int
) -> None:
    result = client.predict("m", {"x": X}, version=version, label=label)
    assert result.model_spec.version == expected
    assert np.allclose(result.as_numpy("y"), _expected_y(expected))


def test_bare_array_for_one_input_signature(client: ServingClient) -> None:
    result = client.predict("m", np.array(X, np.float32))
    assert np.allclose(result.as_numpy("y"), _expected_y(2))


def test_output_filter_returns_only_those_outputs(client: ServingClient) -> None:
    result = client.predict("m", {"x": X}, output_filter=["y"])
    assert list(result.outputs) == ["y"]


def test_unknown_output_name_lists_the_names(client: ServingClient) -> None:
    result = client.predict("m", {"x": X})
    with pytest.raises(KeyError, match="no output named 'z'; outputs are: doubled, y"):
        result.as_numpy("z")


def test_string_signature(client: ServingClient) -> None:
    result = client.predict("m", {"text": ["ab", "é"]}, signature="strings")
    assert result.as_numpy("upper").tolist() == [b"AB", "é".encode()]


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        (
            {"nope": X},
            r"unknown input 'nope'; missing input 'x'; the signature expects x: float32 \[\?, 2\]",
        ),
        ({"x": np.array(X)}, r"input 'x': dtype float64 does not match the signature's float32"),
        ({"x": [1.0, 2.0]}, r"input 'x': shape \[2\] does not fit the signature's \[\?, 2\]"),
        ({"x": [[1.0, 2.0, 3.0]]}, r"shape \[1, 3\] does not fit"),
        ({"x": [["a", "b"]]}, r"input 'x'.*expected float32"),
    ],
)
def test_validation_before_sending(client: ServingClient, inputs: Any, match: str) -> None:
    with pytest.raises(errors.InvalidInputError, match=match) as info:
        client.predict("m", inputs)
    assert info.value.code is None  # found client-side, nothing was sent


def test_server_rejects_what_validation_would_have_caught(server: Any) -> None:
    with ServingClient(server.address, validate=False) as raw_client:
        with pytest.raises(errors.InvalidInputError, match="Expects arg") as info:
            raw_client.predict("m", {"x": np.array(X)})
    assert info.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("validate", [True, False])
def test_missing_signature(server: Any, validate: bool) -> None:
    with ServingClient(server.address, validate=validate) as c:
        with pytest.raises(errors.ServingSignatureNotFoundError, match="nope"):
            c.predict("m", {"x": X}, signature="nope")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": "ghost"}, errors.ModelNotFoundError, r"Latest\(ghost\)"),
        ({"model": "m", "version": 9}, errors.VersionNotFoundError, r"Specific\(m, 9\)"),
        ({"model": "m", "label": "beta"}, errors.VersionNotFoundError, "label: beta"),
    ],
)
def test_not_found_errors(
    server: Any, kwargs: dict[str, Any], error: type[errors.ServingCallError], match: str
) -> None:
    with ServingClient(server.address, validate=False) as c:
        with pytest.raises(error, match=match) as info:
            c.predict(inputs={"x": X}, **kwargs)
    assert type(info.value) is error
    assert info.value.model == kwargs["model"]


def test_classify_records_and_examples(client: ServingClient, tf: Any) -> None:
    example = tf.train.Example()
    example.features.feature["x"].float_list.value.extend([0.0, 0.0])
    result = client.classify("m", [{"x": [1.0, 2.0]}, example], signature="classify")
    assert [label for label, _ in result.classes[0]] == ["neg", "pos"]
    assert result.scores.shape == (2, 2)
    assert np.allclose(result.scores.sum(axis=1), 1.0)
    # version 2 adds 2 to the "pos" logit: for x=(0,0) scores are softmax(0, 2)
    assert np.isclose(result.scores[1, 1], np.exp(2) / (1 + np.exp(2)), atol=1e-5)
    assert result.labels.tolist() == [["neg", "pos"], ["neg", "pos"]]
    assert result.model_spec.version == 2


def test_classify_with_context(client: ServingClient) -> None:
    result = client.classify("m", [{}, {}], context={"x": [0.0, 0.0]}, signature="classify", version=1)
    assert np.allclose(result.scores[:, 1], np.exp(1) / (1 + np.exp(1)), atol=1e-5)


def test_regress(client: ServingClient) -> None:
    result = client.regress("m", [{"x": [1.0, 2.0]}, {"x": [0.5, 0.5]}], signature="regress", label="stable")
    assert np.allclose(result.values, [4.0, 2.0])
    assert result.as_numpy().dtype == np.float32


def test_multi_inference(client: ServingClient) -> None:
    result = client.multi_inference("m", [{"x": [1.0, 1.0]}], [("regress", "regress")], version=1)
    (regressed,) = result.results
    assert regressed.model_spec.signature_name == "regress"
    assert isinstance(regressed, RegressResult)
    assert np.allclose(regressed.as_numpy(), [3.0])
    # TF2 signatures each have their own input tensor; each gets the examples (TF Serving 2.4+).
    both = client.multi_inference(
        "m", [{"x": [1.0, 1.0]}], [("classify", "classify"), ("regress", "regress")], version=1
    )
    assert [r.model_spec.signature_name for r in both.results] == ["classify", "regress"]
    assert isinstance(both.results[1], RegressResult)
    assert np.allclose(both.results[1].as_numpy(), [3.0])


def test_metadata_uses_the_inspector_structures(client: ServingClient) -> None:
    from tfship.inspect import SignatureInfo

    meta = client.metadata("m", version=1)
    assert meta.model_spec.version == 1
    sig = meta.signature()
    assert isinstance(sig, SignatureInfo)
    assert sig.inputs["x"].dtype == "float32" and sig.inputs["x"].shape == (None, 2)
    assert {"classify", "regress", "strings", "serving_default"} <= set(meta.signatures)
    with pytest.raises(errors.ServingSignatureNotFoundError, match="signatures are: classify"):
        meta.signature("nope")


def test_status_lists_versions_newest_first(client: ServingClient) -> None:
    found = client.status("m")
    assert found == [VersionStatus(2, "AVAILABLE", "OK", ""), VersionStatus(1, "AVAILABLE", "OK", "")]
    assert client.status("m", version=1) == [VersionStatus(1, "AVAILABLE", "OK", "")]
    with pytest.raises(errors.VersionNotFoundError, match="Could not find version 5"):
        client.status("m", version=5)


def test_wait_until_available(client: ServingClient) -> None:
    assert client.wait_until_available("m", timeout=5).version == 2
    with pytest.raises(errors.DeadlineExceededError, match="'m' version 7 not available after"):
        client.wait_until_available("m", 7, timeout=0.4)


def test_message_size_limit(server: Any) -> None:
    big = np.ones((400, 2), np.float32)
    with ServingClient(server.address, max_message_bytes=2000, validate=False) as small:
        with pytest.raises(errors.MessageTooLargeError, match="max_message_bytes"):
            small.predict("m", {"x": big})


def test_close_is_idempotent(server: Any) -> None:
    c = ServingClient(server.address)
    c.close()
    c.close()
    with pytest.raises(errors.CallCancelledError, match="closed"):
        c.status("m")


@pytest.mark.slow
def test_reload_config(model_base: Path) -> None:
    from tfship.server import ModelServer, ServerOptions

    with ModelServer.from_base_path(model_base, "m", options=ServerOptions(port=0, poll_seconds=0.2)) as srv:
        with ServingClient(srv.address) as c:
            c.wait_until_available("m", timeout=30)
            c.reload_config(
                [
                    {"name": "m", "base_path": str(model_base), "model_platform": "tensorflow"},
                    {
                        "name": "n",
                        "base_path": str(model_base),
                        "model_platform": "tensorflow",
                        "model_version_policy": {"specific": {"versions": [1]}},
                    },
                ]
            )
            assert c.wait_until_available("n", 1, timeout=30).version == 1
            assert c.predict("n", {"x": X}).model_spec.version == 1
            with pytest.raises(errors.InvalidInputError, match="ModelConfigList"):
                from tensorflow_serving.config import model_server_config_pb2

                c.reload_config(model_server_config_pb2.ModelServerConfig())


@pytest.mark.slow
def test_retries_until_a_real_server_comes_up(model_base: Path) -> None:
    import socket
    import threading

    from tfship.serve_client import RetryPolicy
    from tfship.server import ModelServer, ServerOptions

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    late = ModelServer.from_base_path(model_base, "m", options=ServerOptions(port=port))
    starter = threading.Timer(0.5, late.start)
    policy = RetryPolicy(attempts=100, initial_backoff=0.05, max_backoff=0.25)
    try:
        with ServingClient(f"127.0.0.1:{port}", retries=policy) as c:
            starter.start()
            result = c.predict("m", {"x": X}, timeout=30)
        assert np.allclose(result.as_numpy("y"), _expected_y(2))
    finally:
        starter.join()
        late.stop()


def test_cast_allows_same_kind_numpy_inputs(server: Any) -> None:
    with ServingClient(server.address, cast=True) as casting:
        result = casting.predict("m", {"x": np.array(X, np.float64)})
        assert np.allclose(result.as_numpy("y"), _expected_y(2))
        assert casting.predict("m", {"x": np.array(X, np.int64)}).as_numpy("y").dtype == np.float32
        with pytest.raises(errors.InvalidInputError, match="dtype string does not match.*cannot be cast"):
            casting.predict("m", {"x": np.array([["a", "b"]])})
        with pytest.raises(errors.InvalidInputError, match="dtype complex128 does not match"):
            casting.predict("m", {"x": np.array(X, np.complex128)})


def test_unknown_output_filter_fails_before_sending(client: ServingClient) -> None:
    with pytest.raises(errors.InvalidInputError, match=r"no outputs \['z'\]; outputs are: doubled, y"):
        client.predict("m", {"x": X}, output_filter=["y", "z"])
    with pytest.raises(TypeError, match="not a str"):
        client.predict("m", {"x": X}, output_filter="y")


def test_dataframe_columns_are_inputs(client: ServingClient) -> None:
    import pandas as pd

    frame = pd.DataFrame({"text": ["ab", "cd"]})
    assert client.predict("m", frame, signature="strings").as_numpy("upper").tolist() == [
        b"AB",
        b"CD",
    ]
