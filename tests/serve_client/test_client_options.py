"""Channel options of the gRPC transport and the retry schedule."""

from __future__ import annotations

import random

import pytest

from tfship.serve_client import GrpcTransport, RetryPolicy


def channel_options(max_message_bytes: int, keepalive: float | None, extra: list) -> list:
    # A channel to nowhere connects lazily: building it is enough to read its options.
    transport = GrpcTransport(
        "127.0.0.1:9", max_message_bytes=max_message_bytes, keepalive=keepalive, options=extra
    )
    transport.close()
    return transport.channel_options


def test_channel_defaults_raise_the_message_limit_and_keep_alive() -> None:
    options = dict(channel_options(2**31 - 1, 30.0, []))
    assert options["grpc.max_receive_message_length"] == 2**31 - 1
    assert options["grpc.max_send_message_length"] == 2**31 - 1
    assert options["grpc.keepalive_time_ms"] == 30000
    assert options["grpc.max_reconnect_backoff_ms"] <= 1000


def test_caller_options_override_defaults() -> None:
    options = channel_options(100, None, [("grpc.max_receive_message_length", 5), ("x.y", 1)])
    assert options.count(("grpc.max_receive_message_length", 5)) == 1
    assert ("grpc.max_receive_message_length", 100) not in options
    assert "grpc.keepalive_time_ms" not in dict(options)
    assert ("x.y", 1) in options


def test_backoff_is_capped_exponential_with_jitter() -> None:
    policy = RetryPolicy(initial_backoff=0.1, max_backoff=0.5, multiplier=2.0, jitter=0.5)
    rng = random.Random(7)
    for attempt, cap in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.5), (9, 0.5)]:
        delays = [policy.delay(attempt, rng) for _ in range(200)]
        assert all(cap * 0.5 <= d <= cap for d in delays)
        assert max(delays) - min(delays) > cap * 0.3  # jitter spreads the retries


@pytest.mark.parametrize(("retries", "attempts"), [(None, 1), (0, 1), (3, 4)])
def test_retries_as_a_count(retries: int | None, attempts: int) -> None:
    assert RetryPolicy.of(retries).attempts == attempts


@pytest.mark.parametrize("bad", [-1, True, 1.5])
def test_bad_retries_are_misuse(bad: object) -> None:
    with pytest.raises(ValueError, match="retries must be"):
        RetryPolicy.of(bad)  # type: ignore[arg-type]
