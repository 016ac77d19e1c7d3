"""The client's public surface: exactly these names, each importable, without eager TensorFlow."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tfship.serve_client as serve_client

CLIENT_NAMES = {
    "DEFAULT",
    "AsyncGrpcTransport",
    "AsyncInProcessTransport",
    "AsyncRestTransport",
    "AsyncServingClient",
    "GrpcTransport",
    "InProcessTransport",
    "RestTransport",
    "RestServingClient",
    "CallCancelledError",
    "ClassifyResult",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InvalidInputError",
    "MalformedResponseError",
    "MessageTooLargeError",
    "MicroBatchingOptions",
    "ModelLoadFailedError",
    "ModelMetadata",
    "ModelNotFoundError",
    "ModelSpec",
    "MultiInferenceResult",
    "PermissionDeniedError",
    "PredictResult",
    "RegressResult",
    "ResourceExhaustedError",
    "RetryPolicy",
    "ServerInternalError",
    "ServingCallError",
    "ServingClient",
    "ServingSignatureNotFoundError",
    "TlsConfig",
    "TlsError",
    "UnavailableError",
    "UnimplementedError",
    "VersionNotFoundError",
    "VersionStatus",
    "decode_tensor",
    "encode_tensor",
}


def test_client_exports_are_exactly_the_public_names() -> None:
    assert serve_client.__all__ == sorted(CLIENT_NAMES)
    for name in CLIENT_NAMES:
        assert getattr(serve_client, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'TlsConfigs'"):
        serve_client.TlsConfigs  # noqa: B018


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("TLSConfig", "TlsConfig"),
        ("BatchingConfig", "MicroBatchingOptions"),
        ("BatchingOptions", "MicroBatchingOptions"),
    ],
)
def test_the_earlier_spellings_still_import_and_warn(old: str, new: str) -> None:
    with pytest.warns(
        DeprecationWarning,
        match=rf"^tfship\.serve_client\.{old} is deprecated: use tfship\.serve_client\.{new}$",
    ):
        assert getattr(serve_client, old) is getattr(serve_client, new)
    assert old not in serve_client.__all__


def test_importing_the_package_does_not_import_tensorflow() -> None:
    code = "import sys, tfship.serve_client; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_client_help_does_not_import_tensorflow() -> None:
    code = (
        "import sys\nfrom tfship.cli import cli\n"
        "try:\n    cli.main(['client', 'predict', '--help'], standalone_mode=False)\n"
        "except SystemExit:\n    pass\nprint('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
    assert "--schema" in out.stdout
