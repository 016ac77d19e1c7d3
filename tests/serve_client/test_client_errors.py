"""Every gRPC status code maps to one class of the ServingError tree, refined by TFS messages."""

from __future__ import annotations

import grpc
import pytest

from tfship.errors import ServingError, TfshipError
from tfship.serve_client import _errors as errors


def test_every_status_code_has_a_mapping() -> None:
    missing = [code.name for code in grpc.StatusCode if code.name not in errors.CODE_TO_ERROR]
    assert missing == []
    assert set(errors.CODE_TO_ERROR) == {code.name for code in grpc.StatusCode}


def test_every_class_roots_in_serving_error() -> None:
    for cls in errors.CODE_TO_ERROR.values():
        assert issubclass(cls, errors.ServingCallError)
        assert issubclass(cls, ServingError) and issubclass(cls, TfshipError)


@pytest.mark.parametrize(
    ("code", "details", "expected"),
    [
        ("NOT_FOUND", "Servable not found for request: Latest(m)", errors.ModelNotFoundError),
        ("NOT_FOUND", "Could not find any versions of model m", errors.ModelNotFoundError),
        ("NOT_FOUND", "Servable not found for request: Specific(m, 4)", errors.VersionNotFoundError),
        ("NOT_FOUND", "Could not find version 4 of model m", errors.VersionNotFoundError),
        (
            "INVALID_ARGUMENT",
            "Unrecognized servable version label: canary",
            errors.VersionNotFoundError,
        ),
        (
            "FAILED_PRECONDITION",
            'Serving signature key "nope" not found.',
            errors.ServingSignatureNotFoundError,
        ),
        (
            "INVALID_ARGUMENT",
            "No signature was found with the name: nope",
            errors.ServingSignatureNotFoundError,
        ),
        (
            "INVALID_ARGUMENT",
            'Serving signature name: "nope" not found in signature def',
            errors.ServingSignatureNotFoundError,
        ),
        (
            "RESOURCE_EXHAUSTED",
            "Received message larger than max (5242880 vs. 4194304)",
            errors.MessageTooLargeError,
        ),
        ("RESOURCE_EXHAUSTED", "all batch threads are busy", errors.ResourceExhaustedError),
        ("INVALID_ARGUMENT", "Expects arg[0] to be float but double", errors.InvalidInputError),
        ("FAILED_PRECONDITION", "something else", errors.FailedPreconditionError),
        ("UNAVAILABLE", "failed to connect to all addresses", errors.UnavailableError),
        ("DEADLINE_EXCEEDED", "Deadline Exceeded", errors.DeadlineExceededError),
        ("UNAUTHENTICATED", "no", errors.PermissionDeniedError),
        ("DATA_LOSS", "x", errors.ServerInternalError),
    ],
)
def test_messages_refine_the_class(code: str, details: str, expected: type) -> None:
    err = errors.error_from_status(code, details, model="m", version=4, method="Predict")
    assert type(err) is expected
    assert (err.code, err.details, err.model, err.version) == (code, details, "m", 4)
    assert str(err).startswith("Predict model 'm' version 4: " + details)
    assert f"[{code}]" in str(err)


def test_input_errors_exit_2_and_server_failures_exit_1() -> None:
    assert errors.InvalidInputError("x").exit_code == 2
    assert errors.ModelNotFoundError("x").exit_code == 2
    assert errors.UnavailableError("x").exit_code == 1
