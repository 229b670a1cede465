"""The errors this project raises on purpose, and the ones its service clients raise.

The server maps each class to one gRPC status code (``server/errors.py``); the clients map each
status code back to one of these classes (``clients/grpc_base.py``), so a caller of the Python
client catches the same exceptions as a caller of the library. The last four are about the call
rather than its content: the client raises them when the server cannot be reached, a deadline
passes, the token is refused, or the server fails.
"""

from __future__ import annotations


class OppModelError(Exception):
    """Base class of every error this project raises on purpose.

    Each pickles whole, whatever its constructor takes: the server's model workers send them
    between processes (``server/model_worker.py``).
    """

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[OppModelError], args: tuple[object, ...], state: dict) -> OppModelError:
    """An error of ``cls`` with ``args`` and attributes ``state``, its constructor not called."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class InvalidArgumentError(OppModelError, ValueError):
    """A parameter or input is malformed or out of range; the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def renamed(exc: InvalidArgumentError, field: str) -> InvalidArgumentError:
    """The same error class and message, reported against ``field`` instead."""
    message = str(exc)
    prefix = f"{exc.field}: "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    return type(exc)(field, message)


class UnknownGameError(InvalidArgumentError):
    """The game is not one the project can model."""


class IllegalActionError(InvalidArgumentError):
    """An action (or betting string) is not legal where it was taken."""


class InvalidStrategyError(InvalidArgumentError):
    """A strategy has the wrong shape, negative entries, or does not sum to one."""


class NotFoundError(OppModelError, KeyError):
    """A named thing (session, profile, agent) does not exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class FailedPreconditionError(OppModelError):
    """The request is well formed but the current state does not allow it."""


class ResourceExhaustedError(OppModelError):
    """A configured limit (sessions, k, message size) would be exceeded."""


class IdleStreamError(ResourceExhaustedError):
    """The server closed a stream that carried nothing for longer than its idle limit; nothing
    sent was lost, and a new stream continues where it stopped."""


class PermissionDeniedError(OppModelError):
    """The caller does not own the thing it asks for."""


class UnauthenticatedError(OppModelError):
    """The service requires a bearer token and the call carried none, or an unknown one."""


class UnavailableError(OppModelError):
    """The service could not be reached or the connection broke (not running, a wrong address,
    TLS on one side only, an untrusted certificate: the message says which is likely)."""


class GameSolvingError(UnavailableError):
    """The service is solving the session's game (the first use of its rules): the same call
    succeeds once it is solved; the message says in about how many seconds."""


class DeadlineExceededError(OppModelError):
    """The call did not finish within its deadline."""


class ServiceError(OppModelError):
    """The service failed in a way the caller cannot fix: INTERNAL (a bug; the server logged it),
    UNKNOWN, UNIMPLEMENTED (a server without this method), CANCELLED, ... ``code`` names the
    gRPC status."""

    def __init__(self, message: str, *, code: str = "INTERNAL") -> None:
        super().__init__(message)
        self.code = code
