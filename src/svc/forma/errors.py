"""Forma errors, and how Pkl's messages are turned into them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from svc.pkl import PklError

# svc's own package: errors thrown from its modules are svc's validation messages.
_SVC_PACKAGE = "projectpackage://pkg.svc.invalid/svc@"
_FRAME = re.compile(r"^at (?P<member>\S+) \((?P<uri>[^,)]+)(?:, line \d+)?\)$")
_SOURCE = re.compile(r"^\s*(?P<line>\d+) \| ")


class FormaError(Exception):
    """A forma cannot be evaluated; the message says where and why."""


@dataclass(frozen=True)
class Frame:
    uri: str
    line: int | None


def frames(message: str) -> list[Frame]:
    """The stack frames of a Pkl error message, innermost first."""
    found = []
    for block in message.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines or not (match := _FRAME.match(lines[-1])):
            continue
        source = _SOURCE.match(lines[0])
        found.append(Frame(match["uri"], int(source["line"]) if source else None))
    return found


def _display(uri: str) -> str:
    path = Path(unquote(urlparse(uri).path))
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)


def _without_values(message: str) -> str:
    """Drops Pkl's ``Value: …`` lines (to the end of their paragraph): the value may be a secret."""
    kept = []
    for block in message.split("\n\n"):
        lines = block.splitlines()
        cut = next((i for i, line in enumerate(lines) if line.lstrip().startswith("Value: ")), None)
        if cut != 0:
            kept.append("\n".join(lines[:cut]))
    return "\n\n".join(kept)


def _headline(message: str) -> str:
    return message.split("\n\n", 1)[0]


def from_pkl_error(error: PklError) -> FormaError:
    """One line, ``file:line: message``, for svc's validation errors; Pkl's whole message (its
    values left out) for the others, led by the line of the user's file it points at."""
    message = _without_values(str(error))
    stack = frames(message)
    user = next((f for f in stack if f.uri.startswith("file:") and f.line is not None), None)
    where = f"{_display(user.uri)}:{user.line}: " if user is not None else ""
    if stack and stack[0].uri.startswith(_SVC_PACKAGE) and user is not None:
        return FormaError(where + " ".join(_headline(message).split()))
    # svc's own frames say how svc reached the value, not what is wrong with the forma.
    kept = [block for block in message.split("\n\n") if f"({_SVC_PACKAGE}" not in block]
    return FormaError(where + "\n\n".join(kept))
