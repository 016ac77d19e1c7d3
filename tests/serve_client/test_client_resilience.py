"""Retries, deadlines, headers, unix sockets and TLS against a real scripted gRPC server."""

from __future__ import annotations

import datetime
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from tensorflow_serving.apis import predict_pb2

import tfship.serve_client as errors
from tfship.serve_client import RetryPolicy, ServingClient, TlsConfig

from .conftest import ScriptedServer, echo_predict

FAST = RetryPolicy(attempts=4, initial_backoff=0.01, max_backoff=0.05)
X = {"x": [[1.0, 2.0]]}


def test_unavailable_is_retried_until_success(scripted: ScriptedServer) -> None:
    scripted.failures = [(grpc.StatusCode.UNAVAILABLE, "all batch threads are busy")] * 2
    with ServingClient(scripted.address, retries=FAST, validate=False) as client:
        result = client.predict("m", X)
    assert result.as_numpy("x").tolist() == [[1.0, 2.0]]
    assert len(scripted.calls) == 3


@pytest.mark.parametrize(
    "code",
    [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION],
)
def test_never_retried_codes(scripted: ScriptedServer, code: grpc.StatusCode) -> None:
    scripted.failures = [(code, "no")] * 3
    with ServingClient(scripted.address, retries=FAST, validate=False) as client:
        with pytest.raises(errors.ServingCallError) as info:
            client.predict("m", X)
    assert info.value.code == code.name
    assert len(scripted.calls) == 1


def test_retries_stop_after_the_attempt_budget(scripted: ScriptedServer) -> None:
    scripted.failures = [(grpc.StatusCode.UNAVAILABLE, "busy")] * 10
    with ServingClient(scripted.address, retries=FAST, validate=False) as client:
        with pytest.raises(errors.UnavailableError, match="after 4 attempts"):
            client.predict("m", X)
    assert len(scripted.calls) == 4


@pytest.mark.timing
def test_retries_stay_within_the_overall_deadline(scripted: ScriptedServer) -> None:
    scripted.failures = [(grpc.StatusCode.UNAVAILABLE, "busy")] * 1000
    policy = RetryPolicy(attempts=1000, initial_backoff=0.05, max_backoff=0.1)
    with ServingClient(scripted.address, retries=policy, validate=False) as client:
        start = time.monotonic()
        with pytest.raises(errors.UnavailableError):
            client.predict("m", X, timeout=0.6)
        elapsed = time.monotonic() - start
    assert elapsed < 0.9
    assert 3 <= len(scripted.calls) < 30


@pytest.mark.timing
def test_deadline_exceeded(scripted: ScriptedServer) -> None:
    scripted.delay = 0.5
    with ServingClient(scripted.address, validate=False, timeout=0.1) as client:
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError, match="DEADLINE_EXCEEDED"):
            client.predict("m", X)
        assert time.monotonic() - start < 0.45
        scripted.delay = 0.2
        assert client.predict("m", X, timeout=None).outputs  # None: no deadline at all


def test_server_down_then_up(scripted: ScriptedServer) -> None:
    scripted.stop()  # keep the port; come back on it a little later
    restart = threading.Timer(0.5, scripted.start)
    policy = RetryPolicy(attempts=50, initial_backoff=0.05, max_backoff=0.2)
    with ServingClient(scripted.address, retries=policy, validate=False) as client:
        restart.start()
        try:
            result = client.predict("m", X, timeout=10)
        finally:
            restart.join()
    assert result.model_spec.version == 1


def test_down_server_without_retries_is_unavailable(scripted: ScriptedServer) -> None:
    scripted.stop()
    with ServingClient(scripted.address, retries=0, validate=False) as client:
        with pytest.raises(errors.UnavailableError, match="check that the server runs"):
            client.predict("m", X, timeout=2)


# the class of each error status code, written out: a code left out of the client's table, or
# mapped to another class, fails here
CODE_CLASSES: dict[str, type[errors.ServingCallError]] = {
    "CANCELLED": errors.CallCancelledError,
    "UNKNOWN": errors.ServerInternalError,
    "INVALID_ARGUMENT": errors.InvalidInputError,
    "DEADLINE_EXCEEDED": errors.DeadlineExceededError,
    "NOT_FOUND": errors.ModelNotFoundError,
    "ALREADY_EXISTS": errors.ServerInternalError,
    "PERMISSION_DENIED": errors.PermissionDeniedError,
    "RESOURCE_EXHAUSTED": errors.ResourceExhaustedError,
    "FAILED_PRECONDITION": errors.FailedPreconditionError,
    "ABORTED": errors.ServerInternalError,
    "OUT_OF_RANGE": errors.InvalidInputError,
    "UNIMPLEMENTED": errors.UnimplementedError,
    "INTERNAL": errors.ServerInternalError,
    "UNAVAILABLE": errors.UnavailableError,
    "DATA_LOSS": errors.ServerInternalError,
    "UNAUTHENTICATED": errors.PermissionDeniedError,
}


def test_the_table_names_every_status_code() -> None:
    assert set(CODE_CLASSES) == {code.name for code in grpc.StatusCode} - {"OK"}


@pytest.mark.parametrize("code", [c for c in grpc.StatusCode if c is not grpc.StatusCode.OK])
def test_every_status_code_becomes_its_class(scripted: ScriptedServer, code: Any) -> None:
    scripted.failures = [(code, "scripted failure")]
    with ServingClient(scripted.address, retries=0, validate=False) as client:
        with pytest.raises(errors.ServingCallError) as info:
            client.predict("m", X, version=3)
    assert type(info.value) is CODE_CLASSES[code.name]
    assert (info.value.code, info.value.details) == (code.name, "scripted failure")
    assert (info.value.model, info.value.version) == ("m", 3)


def test_version_none_is_never_sent_and_zero_is(scripted: ScriptedServer) -> None:
    with ServingClient(scripted.address, validate=False) as client:
        client.predict("m", X)
        client.predict("m", X, version=0)
        client.predict("m", X, label="stable")
        with pytest.raises(ValueError, match="version or label, not both"):
            client.predict("m", X, version=1, label="stable")
    specs = [predict_pb2.PredictRequest.FromString(c[1]).model_spec for c in scripted.calls]
    assert [s.HasField("version") for s in specs] == [False, True, False]
    assert specs[1].version.value == 0
    assert specs[2].version_label == "stable"


def test_requests_carry_numeric_tensor_content(scripted: ScriptedServer) -> None:
    with ServingClient(scripted.address, validate=False) as client:
        client.predict("m", {"x": np.ones((3, 2), np.float32)})
    request = predict_pb2.PredictRequest.FromString(scripted.calls[0][1])
    assert len(request.inputs["x"].tensor_content) == 24


def test_headers_are_sent(scripted: ScriptedServer) -> None:
    with ServingClient(scripted.address, validate=False, headers={"Authorization": "Bearer t0ken"}) as client:
        client.predict("m", X)
    assert scripted.calls[0][2]["authorization"] == "Bearer t0ken"


def test_unix_socket_target(tmp_path: Path) -> None:
    srv = ScriptedServer(target=f"unix:{tmp_path / 'serving.sock'}")
    srv.handlers["Predict"] = echo_predict
    srv.start()
    try:
        with ServingClient(srv.address, validate=False) as client:
            assert client.predict("m", X).as_numpy("x").shape == (1, 2)
    finally:
        srv.stop()


def test_retry_policy_refuses_never_retried_codes() -> None:
    with pytest.raises(ValueError, match="never retried"):
        RetryPolicy(retry_on=frozenset({"UNAVAILABLE", "NOT_FOUND"}))


# --------------------------------------------------------------------------------- TLS


def _certificate(name: str, issuer: Any = None) -> tuple[bytes, bytes, Any]:
    """A fresh key and certificate for ``name`` (self-signed unless ``issuer`` = (cert, key))."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_cert.subject if issuer_cert else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    cert = builder.sign(issuer_key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem, (cert, key)


@pytest.fixture(scope="module")
def pki() -> dict[str, bytes]:
    server_cert, server_key, _ = _certificate("serving.test")
    ca_cert, _, ca = _certificate("client-ca")
    client_cert, client_key, _ = _certificate("client", issuer=ca)
    return {
        "server_cert": server_cert,
        "server_key": server_key,
        "ca_cert": ca_cert,
        "client_cert": client_cert,
        "client_key": client_key,
    }


def _tls_server(pki: dict[str, bytes], *, mutual: bool) -> ScriptedServer:
    creds = grpc.ssl_server_credentials(
        [(pki["server_key"], pki["server_cert"])],
        root_certificates=pki["ca_cert"] if mutual else None,
        require_client_auth=mutual,
    )
    srv = ScriptedServer(credentials=creds)
    srv.handlers["Predict"] = echo_predict
    return srv.start()


def test_tls_with_a_self_signed_certificate(pki: dict[str, bytes], tmp_path: Path) -> None:
    srv = _tls_server(pki, mutual=False)
    try:
        ca_file = tmp_path / "server.pem"
        ca_file.write_bytes(pki["server_cert"])
        tls = TlsConfig(ca_cert=ca_file, server_name="serving.test")
        with ServingClient(srv.address, tls=tls, validate=False) as client:
            assert client.predict("m", X).model_spec.version == 1
        with ServingClient(srv.address, tls=True, retries=0, validate=False) as untrusted:
            with pytest.raises(errors.TlsError):
                untrusted.predict("m", X, timeout=3)
    finally:
        srv.stop()


def test_mutual_tls(pki: dict[str, bytes]) -> None:
    srv = _tls_server(pki, mutual=True)
    try:
        full = TlsConfig(
            ca_cert=pki["server_cert"],
            client_cert=pki["client_cert"],
            client_key=pki["client_key"],
            server_name="serving.test",
        )
        with ServingClient(srv.address, tls=full, validate=False) as client:
            assert client.predict("m", X).as_numpy("x").shape == (1, 2)
        anonymous = TlsConfig(ca_cert=pki["server_cert"], server_name="serving.test")
        with ServingClient(srv.address, tls=anonymous, retries=0, validate=False) as client:
            with pytest.raises(errors.UnavailableError):
                client.predict("m", X, timeout=3)
    finally:
        srv.stop()
    with pytest.raises(ValueError, match="both client_cert and client_key"):
        TlsConfig(client_cert=pki["client_cert"]).credentials()


def test_a_forked_child_is_told_to_make_its_own_client(scripted: ScriptedServer) -> None:
    import os

    with ServingClient(scripted.address, validate=False) as client:
        client.predict("m", X)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: must refuse at once, without touching the channel
            try:
                client.predict("m", X)
                message = b"no error"
            except RuntimeError as exc:
                message = str(exc).encode()
            os.write(write, message)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            said = pipe.read().decode()
        os.waitpid(pid, 0)
        assert "gRPC channels do not survive fork()" in said
        assert client.predict("m", X).as_numpy("x").shape == (1, 2)  # the parent is unaffected
