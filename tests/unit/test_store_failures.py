"""Which failures are a request to the store cut off or throttled (tried again as a new attempt
of the batch: docs/exactly-once.md) and which are not (the batch fails, as it would again)."""

from __future__ import annotations

import pytest

from lakefresh.lakehouse.failures import is_commit_conflict, is_interrupted_io


class SocketException(Exception):  # as the Java chain names it
    pass


class CommitFailedException(Exception):
    pass


@pytest.mark.parametrize(
    "exc",
    [
        SocketException("Unexpected end of file from server"),
        ConnectionResetError("Connection reset by peer"),
        RuntimeError("java.io.UncheckedIOException: Unexpected end of file from server"),
        RuntimeError("Unable to execute HTTP request: Connect to 127.0.0.1:9000 failed: Connection refused"),
        RuntimeError("Please reduce your request rate. (Service: S3, Status Code: 503, Request ID: x)"),
    ],
)
def test_a_request_cut_off_or_throttled_is_interrupted_io(exc):
    assert is_interrupted_io(exc)


def test_a_cause_is_looked_at_when_the_outer_error_says_nothing():
    try:
        try:
            raise SocketException("Broken pipe")
        except SocketException as inner:
            raise RuntimeError("the write failed") from inner
    except RuntimeError as outer:
        assert is_interrupted_io(outer)


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("Cannot parse '10.50' as int"),
        RuntimeError("Access Denied (Service: S3, Status Code: 403, Request ID: x)"),
        RuntimeError("The specified bucket does not exist (Service: S3, Status Code: 404)"),
        CommitFailedException("Requirement failed: branch main has changed"),
    ],
)
def test_a_refusal_or_a_bad_batch_is_not(exc):
    assert not is_interrupted_io(exc)


def test_a_commit_conflict_stays_a_conflict_not_a_store_failure():
    exc = CommitFailedException("Requirement failed: branch main has changed")
    assert is_commit_conflict(exc) and not is_interrupted_io(exc)


def test_a_format_s_own_conflict_is_raised_as_the_seam_s_one_name_and_anything_else_as_it_is():
    from lakefresh.errors import CommitConflictError
    from lakefresh.lakehouse.failures import conflict_raised_as

    own = CommitFailedException("Requirement failed: branch main has changed")
    with (
        pytest.raises(CommitConflictError, match="another write came first") as raised,
        conflict_raised_as("another write came first"),
    ):
        raise own
    assert raised.value.__cause__ is own
    with pytest.raises(CommitConflictError, match=r"^already named$"), conflict_raised_as("renamed"):
        raise CommitConflictError("already named")
    with pytest.raises(ValueError, match="a bad value"), conflict_raised_as("renamed"):
        raise ValueError("a bad value")
