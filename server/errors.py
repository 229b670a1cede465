"""The one table from domain errors (``modeling/errors.py``) to gRPC status codes.

A domain error becomes its status code with the error's own message ("field: why"); the class name
and the field travel in trailing metadata (``oppmodel-error``, ``oppmodel-field``, the field
escaped to printable ASCII as metadata must be) so the client can raise the very same exception
class. Anything else is a bug: it is logged with its traceback and the
caller sees INTERNAL with a generic message (no internals leak).
"""

from __future__ import annotations

import logging

import grpc

from oppmodel.modeling.errors import (
    DeadlineExceededError,
    FailedPreconditionError,
    GameSolvingError,
    IdleStreamError,
    IllegalActionError,
    InvalidArgumentError,
    InvalidStrategyError,
    NotFoundError,
    OppModelError,
    PermissionDeniedError,
    ResourceExhaustedError,
    ServiceError,
    UnauthenticatedError,
    UnavailableError,
    UnknownGameError,
)

log = logging.getLogger("oppmodel.server")


STATUS_BY_ERROR: dict[type[OppModelError], grpc.StatusCode] = {
    InvalidArgumentError: grpc.StatusCode.INVALID_ARGUMENT,
    UnknownGameError: grpc.StatusCode.INVALID_ARGUMENT,
    IllegalActionError: grpc.StatusCode.INVALID_ARGUMENT,
    InvalidStrategyError: grpc.StatusCode.INVALID_ARGUMENT,
    NotFoundError: grpc.StatusCode.NOT_FOUND,
    FailedPreconditionError: grpc.StatusCode.FAILED_PRECONDITION,
    ResourceExhaustedError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    IdleStreamError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    PermissionDeniedError: grpc.StatusCode.PERMISSION_DENIED,
    UnauthenticatedError: grpc.StatusCode.UNAUTHENTICATED,
    UnavailableError: grpc.StatusCode.UNAVAILABLE,
    GameSolvingError: grpc.StatusCode.UNAVAILABLE,
    DeadlineExceededError: grpc.StatusCode.DEADLINE_EXCEEDED,
    ServiceError: grpc.StatusCode.INTERNAL,
}

ERROR_CLASS_KEY = "oppmodel-error"
ERROR_FIELD_KEY = "oppmodel-field"
INTERNAL_MESSAGE = "internal error; the server log has the details"


def status_of(exc: BaseException) -> grpc.StatusCode:
    """The status code for an exception: the nearest class in the table, else INTERNAL."""
    for cls in type(exc).__mro__:
        code = STATUS_BY_ERROR.get(cls)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


def error_details(exc: BaseException) -> tuple[grpc.StatusCode, str, tuple[tuple[str, str], ...]]:
    """(code, message, trailing metadata) to send for an exception raised while serving.

    Unexpected exceptions are logged here with their traceback.
    """
    code = status_of(exc)
    if code is grpc.StatusCode.INTERNAL:
        log.error("unexpected error", exc_info=exc)
        return code, INTERNAL_MESSAGE, ()
    metadata: tuple[tuple[str, str], ...] = ((ERROR_CLASS_KEY, type(exc).__name__),)
    field = getattr(exc, "field", None)
    if field is not None:
        metadata += ((ERROR_FIELD_KEY, metadata_text(field)),)
    return code, str(exc), metadata


def metadata_text(text: str) -> str:
    """``text`` as printable ASCII, which gRPC requires of a metadata value: other characters
    become Python escapes (``'²p'`` -> ``'\\xb2p'``; ``codecs.decode(value, "unicode_escape")``
    restores them). Fields can quote the client's own text, and one ``'²'`` in a trailing value
    turned a refusal into INTERNAL ("Invalid metadata")."""
    return text.encode("unicode_escape").decode("ascii")
