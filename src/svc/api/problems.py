"""Plain HTTP refusals in the reference's two untyped shapes: ``{"message": …}`` and ``{"error": "…"}``.

Typed domain errors (``{"error": Type, "data": {…}}``) come from the engine's ``EngineError``; these are
for what the HTTP layer itself refuses (a missing header, a malformed upload) and for "nothing found".
"""

from __future__ import annotations

from typing import Any


class HttpProblem(Exception):
    """Answered as ``status`` with ``body``; nothing is stored when a request ends in one."""

    def __init__(self, status: int, body: dict[str, Any] | None) -> None:
        super().__init__(str(body))
        self.status = status
        self.body = body


def bad_request(message: str) -> HttpProblem:
    return HttpProblem(400, {"message": message})


def not_found(message: str) -> HttpProblem:
    return HttpProblem(404, {"message": message})


def nothing_found(text: str) -> HttpProblem:
    """The reference's 404 for empty inventory lists: ``{"error": "No stacks found"}``."""
    return HttpProblem(404, {"error": text})
