"""The agent's answers decoded once, here, into the model's wire shapes (``svc.model.wire``).

The shapes are the agent's own, one definition each; they forbid unknown fields because the agent emits and
validates them. A CLI must still read the answers of an agent that has grown a field, so it validates the same
shapes with ``extra="ignore"``: an unknown field is dropped, and the commands and renderings read attributes.
An answer that lacks a field the CLI needs (or gives it a wrong type) is a one-line ``CliError`` naming the
field, not a traceback. Machine output prints the decoded answer again (``to_json``): for an agent of the
CLI's own version (the only one ``connect`` accepts) that is the document the agent sent.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from svc.cli.errors import CliError

if TYPE_CHECKING:
    from svc.model.forma import Policy

Shape = TypeVar("Shape", bound=BaseModel)
_LENIENT = "ignore"  # a newer agent's extra fields are none of this CLI's business


def decode(shape: type[Shape], body: Any, answer: str) -> Shape:
    """The answer ``body`` to ``answer`` (e.g. "GET /commands/status") as ``shape``: its JSON text, or the document
    already parsed from it."""
    try:
        if isinstance(body, bytes | str):
            return shape.model_validate_json(body, extra=_LENIENT)
        return shape.model_validate(body, extra=_LENIENT)
    except ValidationError as exc:
        raise _not_understood(exc, answer) from None


def decode_list(shape: type[Shape], body: bytes | str, answer: str) -> list[Shape]:
    """A JSON array answer, each item a ``shape``."""
    try:
        return _list_of(shape).validate_json(body, extra=_LENIENT)
    except ValidationError as exc:
        raise _not_understood(exc, answer) from None


def policy(document: dict[str, Any]) -> Policy:
    """A policy document inside an answer (a stack's ``Policies``, a standalone policy's ``Config``): the wire
    shapes keep them as JSON because the agent adds keys per policy type."""
    from svc.model.forma import Policy  # the forma model loads only for the commands that show policies

    try:
        return Policy.model_validate(document, extra=_LENIENT)
    except ValidationError as exc:
        raise _not_understood(exc, "a policy document") from None


@functools.cache
def _list_of(shape: type[Shape]) -> TypeAdapter[list[Shape]]:
    return TypeAdapter(list[shape])  # type: ignore[valid-type]


def _not_understood(error: ValidationError, answer: str) -> CliError:
    first = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the answer"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return CliError(f"the agent's answer to {answer} is not what this CLI understands: {where}: {first['msg']}"
                    f"{more}; the CLI and the agent must be the same version (see svc agent status)")
