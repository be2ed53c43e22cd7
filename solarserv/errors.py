"""The one error type of the service. Handlers write it as the spec's error envelope."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A failure the client is told about: machine-readable code, HTTP status, message, extra keys."""

    def __init__(self, code: str, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.extra = extra

    def envelope(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}

    def __repr__(self) -> str:
        return f"ApiError({self.code!r}, {self.status}, {self.message!r})"


def malformed(message: str) -> ApiError:
    """The request is not of the expected shape: not a JSON object, a wrong type, a missing field."""
    return ApiError("INVALID_REQUEST", 400, message)


def invalid(message: str) -> ApiError:
    """The request is well-formed but its values are not acceptable (the GET alias answers it with 400)."""
    return ApiError("INVALID_REQUEST", 422, message)
