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


def timezone_unresolved(message: str) -> ApiError:
    """No IANA zone the service has applies at the point: international waters, Antarctica outside every
    station's zone, or a zone newer than the installed tzdata. Retrying cannot help."""
    return ApiError("TIMEZONE_RESOLUTION_FAILED", 422, message)


def geocoder_unavailable(message: str, retry_after: int | None = None) -> ApiError:
    """The place-name geocoder cannot answer now (an online provider failing or refusing, the offline index
    not built); ``retry_after``: the seconds after which asking again may succeed, when known."""
    extra = {} if retry_after is None else {"retry_after": retry_after}
    return ApiError("GEOCODER_UNAVAILABLE", 503, message, **extra)
