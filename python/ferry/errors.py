"""Exceptions raised by ferry, and the one table that maps the library's status codes to them.

Every error from the native library carries a canonical status code; ``from_status`` turns it
into the exception class below, which also derives from the built-in exception a Python user
would catch for that kind of failure (``NotFoundError`` is a ``FileNotFoundError``, and so on).
"""

from __future__ import annotations

import json


class FerryError(Exception):
    """Base class of every ferry error. ``code`` is the canonical status code name."""

    code = "UNKNOWN"


class CancelledError(FerryError):
    code = "CANCELLED"


class InvalidArgumentError(FerryError, ValueError):
    code = "INVALID_ARGUMENT"


class DeadlineExceededError(FerryError, TimeoutError):
    code = "DEADLINE_EXCEEDED"


class NotFoundError(FerryError, FileNotFoundError):
    code = "NOT_FOUND"


class AlreadyExistsError(FerryError, FileExistsError):
    code = "ALREADY_EXISTS"


class PermissionDeniedError(FerryError, PermissionError):
    code = "PERMISSION_DENIED"


class UnauthenticatedError(PermissionDeniedError):
    code = "UNAUTHENTICATED"


class ResourceExhaustedError(FerryError):
    code = "RESOURCE_EXHAUSTED"


class FailedPreconditionError(FerryError, RuntimeError):
    code = "FAILED_PRECONDITION"


class AbortedError(FerryError):
    code = "ABORTED"


class OutOfRangeError(FerryError, IndexError):
    code = "OUT_OF_RANGE"


class UnimplementedError(FerryError, NotImplementedError):
    code = "UNIMPLEMENTED"


class InternalError(FerryError):
    code = "INTERNAL"


class UnavailableError(FerryError, ConnectionError):
    code = "UNAVAILABLE"


class DataLossError(FerryError, ValueError):
    """Corrupt data: a shard whose hash or size is wrong, an index that cannot be read (a
    ValueError, as the reference's checksum and index errors are)."""

    code = "DATA_LOSS"


class MissingIndexError(NotFoundError, RuntimeError):
    """A dataset folder without ``index.json`` and no remote to fetch it from: not found, and
    the reference's RuntimeError."""


class IndexDecodeError(DataLossError, json.JSONDecodeError):
    """An ``index.json`` that is empty or not JSON: also a ``json.JSONDecodeError``, as the
    reference raises."""

    def __init__(self, message: str) -> None:
        path = message.split(": ", 1)[0]
        ValueError.__init__(self, f"Index file at {path} is empty or corrupted: {message}")
        self.msg, self.doc, self.pos, self.lineno, self.colno = message, "", 0, 1, 1

    def __reduce__(self):
        # Rebuilt from the native message, not from the formatted one (out of a worker process).
        return type(self), (self.msg,)


_BY_CODE = {
    cls.code: cls
    for cls in (
        CancelledError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        AlreadyExistsError,
        PermissionDeniedError,
        UnauthenticatedError,
        ResourceExhaustedError,
        FailedPreconditionError,
        AbortedError,
        OutOfRangeError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        DataLossError,
    )
}


def from_status(code: str, message: str) -> FerryError:
    """The exception for a native status (code name such as ``"NOT_FOUND"``) and its message."""
    cls = _BY_CODE.get(code, FerryError)
    error = cls(message)
    if cls is FerryError:
        error.code = code
    return error


__all__ = [name for name, value in globals().items() if isinstance(value, type)] + ["from_status"]
