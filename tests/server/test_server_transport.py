"""TLS from an SSLConfig file (like --ssl_config_file) and a unix socket (--grpc_socket_path)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from tensorflow_serving.apis import get_model_status_pb2, model_service_pb2_grpc

from tfship.cli import cli
from tfship.server import ModelConfig, ModelServer, ServerOptions, SslConfig

from .conftest import serve_process

pytestmark = pytest.mark.slow


def self_signed() -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "serving.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("serving.test"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return key_pem, cert.public_bytes(serialization.Encoding.PEM).decode()


def status(channel: grpc.Channel) -> Any:
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "m"
    return stub.GetModelStatus(request, timeout=10)


def test_tls_from_python(module_base: Path) -> None:
    key, cert = self_signed()
    options = ServerOptions(port=0, tls=SslConfig(server_key=key, server_cert=cert))
    with ModelServer([ModelConfig("m", str(module_base))], options) as server:
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.encode())
        with grpc.secure_channel(server.address, credentials) as channel:
            assert status(channel).model_version_status[0].version == 2
        with grpc.insecure_channel(server.address) as plain:
            with pytest.raises(grpc.RpcError) as info:
                status(plain)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_tls_from_an_ssl_config_file(tmp_path: Path, module_base: Path) -> None:
    key, cert = self_signed()
    config = tmp_path / "ssl.config"
    config.write_text(f"server_key: {key!r}\nserver_cert: {cert!r}\n".replace("'", '"'))
    args = [
        "--model-base-path",
        str(module_base),
        "--model-name",
        "m",
        "--port",
        "0",
        "--ssl_config_file",
        str(config),
    ]
    with serve_process(*args) as served:
        address = served.info["grpc"]
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.encode())
        with grpc.secure_channel(address, credentials) as channel:
            assert status(channel).model_version_status[0].version == 2
        with grpc.insecure_channel(address) as plain:
            with pytest.raises(grpc.RpcError) as info:
                status(plain)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('server_key: "k"', "needs server_key and server_cert"),
        ('server_key: "k" server_cert: "c" client_verify: true', "client_verify needs custom_ca"),
        ("server_key {", "Error parsing text-format tensorflow.serving.SSLConfig"),
    ],
)
def test_bad_ssl_config_files(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "ssl.config"
    config.write_text(text)
    args = ["serve", "--port", "0", "--model-base-path", str(tmp_path), "--ssl-config-file", str(config)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: ") and message in result.output
    assert result.output.count("\n") == 1


def test_unix_socket(tmp_path: Path, module_base: Path) -> None:
    socket = tmp_path / "serving.sock"
    models = [ModelConfig("m", str(module_base))]
    with ModelServer(models, ServerOptions(port=0, grpc_socket_path=socket)) as server:
        assert server.describe()["grpc_socket"] == f"unix:{socket}"
        with grpc.insecure_channel(f"unix:{socket}") as channel:
            assert status(channel).model_version_status[0].version == 2
