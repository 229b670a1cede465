"""Domain errors. The server maps each class to one gRPC status code (server/errors.py)."""

from __future__ import annotations


class OppModelError(Exception):
    """Base class of every error this project raises on purpose."""


class InvalidArgumentError(OppModelError, ValueError):
    """A parameter or input is malformed or out of range; the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


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


class PermissionDeniedError(OppModelError):
    """The caller does not own the thing it asks for."""
