"""Every gRPC status code maps to one class of the ServingError tree, refined by TFS messages.

The statuses come from a real scripted gRPC server; what each code becomes without a telling
message is in ``test_client_resilience.py``.
"""

from __future__ import annotations

import grpc
import pytest

import tfship.serve_client as serve_client
from tfship.errors import ServingError, TfshipError
from tfship.serve_client import ServingClient

from .conftest import ScriptedServer

ERROR_CLASSES = [getattr(serve_client, name) for name in serve_client.__all__ if name.endswith("Error")]


def test_every_class_roots_in_serving_error() -> None:
    assert len(ERROR_CLASSES) == 17
    for cls in ERROR_CLASSES:
        assert issubclass(cls, serve_client.ServingCallError)
        assert issubclass(cls, ServingError) and issubclass(cls, TfshipError)


@pytest.mark.parametrize(
    ("code", "details", "expected"),
    [
        ("NOT_FOUND", "Servable not found for request: Latest(m)", serve_client.ModelNotFoundError),
        ("NOT_FOUND", "Could not find any versions of model m", serve_client.ModelNotFoundError),
        (
            "NOT_FOUND",
            "Servable not found for request: Specific(m, 4)",
            serve_client.VersionNotFoundError,
        ),
        ("NOT_FOUND", "Could not find version 4 of model m", serve_client.VersionNotFoundError),
        (
            "INVALID_ARGUMENT",
            "Unrecognized servable version label: canary",
            serve_client.VersionNotFoundError,
        ),
        (
            "FAILED_PRECONDITION",
            'Serving signature key "nope" not found.',
            serve_client.ServingSignatureNotFoundError,
        ),
        (
            "INVALID_ARGUMENT",
            "No signature was found with the name: nope",
            serve_client.ServingSignatureNotFoundError,
        ),
        (
            "INVALID_ARGUMENT",
            'Serving signature name: "nope" not found in signature def',
            serve_client.ServingSignatureNotFoundError,
        ),
        (
            "RESOURCE_EXHAUSTED",
            "Received message larger than max (5242880 vs. 4194304)",
            serve_client.MessageTooLargeError,
        ),
        ("RESOURCE_EXHAUSTED", "all batch threads are busy", serve_client.ResourceExhaustedError),
        ("INVALID_ARGUMENT", "Expects arg[0] to be float but double", serve_client.InvalidInputError),
        ("FAILED_PRECONDITION", "something else", serve_client.FailedPreconditionError),
        ("UNAVAILABLE", "failed to connect to all addresses", serve_client.UnavailableError),
        ("DEADLINE_EXCEEDED", "Deadline Exceeded", serve_client.DeadlineExceededError),
        ("UNAUTHENTICATED", "no", serve_client.PermissionDeniedError),
        ("DATA_LOSS", "x", serve_client.ServerInternalError),
    ],
)
def test_messages_refine_the_class(scripted: ScriptedServer, code: str, details: str, expected: type) -> None:
    scripted.failures = [(grpc.StatusCode[code], details)]
    with ServingClient(scripted.address, retries=0, validate=False) as client:
        with pytest.raises(serve_client.ServingCallError) as info:
            client.predict("m", {"x": [[1.0]]}, version=4)
    err = info.value
    assert type(err) is expected
    assert (err.code, err.details, err.model, err.version) == (code, details, "m", 4)
    assert str(err).startswith("Predict model 'm' version 4: " + details)
    assert f"[{code}]" in str(err)


def test_input_errors_exit_2_and_server_failures_exit_1() -> None:
    assert serve_client.InvalidInputError("x").exit_code == 2
    assert serve_client.ModelNotFoundError("x").exit_code == 2
    assert serve_client.UnavailableError("x").exit_code == 1
