"""The agent's answers decoded once, here, into the model's wire shapes (``svc.model.wire``).

The shapes are the agent's own, one definition each. A CLI must still read the answers of an agent that has
grown a field, so decoding drops the fields a shape does not have, and the commands and renderings read
attributes. An answer that lacks a field the CLI needs (or gives it a wrong type) is a one-line ``CliError``
naming the field, not a traceback. Machine output prints the decoded answer again (``to_json``): for an agent of
the CLI's own version (the only one ``connect`` accepts) that is the document the agent sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from svc.cli.errors import CliError
from svc.model import wire
from svc.model.wire import Shape, WireError

if TYPE_CHECKING:
    from svc.model.forma import Policy

__all__ = ["Shape", "decode", "decode_list", "policy"]


def decode(shape: type[Shape], body: Any, answer: str) -> Shape:
    """The answer ``body`` to ``answer`` (e.g. "GET /commands/status") as ``shape``: its JSON text, or the document
    already parsed from it."""
    try:
        return wire.decode(shape, body)  # type: ignore[no-any-return]
    except WireError as exc:
        raise _not_understood(exc.where, exc.message, answer) from None


def decode_list(shape: type[Shape], body: bytes | str, answer: str) -> list[Shape]:
    """A JSON array answer, each item a ``shape``."""
    try:
        return wire.decode(list[shape], body)  # type: ignore[valid-type,no-any-return]
    except WireError as exc:
        raise _not_understood(exc.where, exc.message, answer) from None


def policy(document: dict[str, Any]) -> Policy:
    """A policy document inside an answer (a stack's ``Policies``, a standalone policy's ``Config``): the wire
    shapes keep them as JSON because the agent adds keys per policy type."""
    from pydantic import ValidationError  # the forma model loads only for the commands that show policies

    from svc.model.forma import Policy

    try:
        return Policy.model_validate(document, extra="ignore")
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the answer"
        raise _not_understood(where, first["msg"], "a policy document") from None


def _not_understood(where: str, message: str, answer: str) -> CliError:
    return CliError(f"the agent's answer to {answer} is not what this CLI understands: {where}: {message}; "
                    "the CLI and the agent must be the same version (see svc agent status)")
