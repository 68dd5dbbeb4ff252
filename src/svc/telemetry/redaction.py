"""Keeping secrets out of exported log records.

The agent never logs a secret on purpose; this is the second line of defence for text that leaves the
process: the config's own secrets, the plain-text opaque values of the resource operations in flight
(and recently finished), and any ``"$value": "…"`` of a property envelope are replaced before export.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from svc.model import values
from svc.model.opaque import NONE, OpaqueFields

REDACTED = "<redacted>"
MIN_LENGTH = 4  # shorter "secrets" would blank out ordinary words; the datastore hashes them anyway
_REMEMBERED = 4096  # plain-text secrets of recent operations kept for redaction
_ENVELOPE_VALUE = re.compile(r"""(["']\$value["']\s*:\s*)(["'])(?:\\.|(?!\2).)*\2""")


def opaque_strings(properties: Any, opaque: OpaqueFields) -> Iterator[str]:
    """The plain-text secrets of desired properties: the schema's opaque values (at any depth) and ``Opaque``
    envelopes."""
    if isinstance(properties, dict):
        for key, value in properties.items():
            yield from _secrets(value, opaque.at(key))


# Module functions, not closures: a closure that calls itself is a reference cycle only the collector frees.
def _secrets(value: Any, node: OpaqueFields = NONE) -> Iterator[str]:
    if values.is_opaque(value) or node.secret:
        yield from _leaves(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _secrets(item, node.at(key))
    elif isinstance(value, list):
        for item in value:
            yield from _secrets(item, node)


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        if value.get("$hashed"):
            return  # a digest, not the secret
        if "$value" in value:  # an envelope: only its value is the user's
            yield from _leaves(value["$value"])
        elif values.is_embed(value):
            yield from _leaves(value.get("$parts", []))
        else:
            for item in value.values():
                yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


class Redactor:
    """Replaces known secrets and envelope values in text; thread-safe (logging calls it from any thread)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._fixed = frozenset(s for s in secrets if len(s) >= MIN_LENGTH)
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, secrets: Iterable[str]) -> None:
        """Adds plain-text secrets (of an operation about to run); the oldest are forgotten past a bound."""
        with self._lock:
            for secret in secrets:
                if len(secret) >= MIN_LENGTH and secret not in self._fixed:
                    self._recent[secret] = None
                    self._recent.move_to_end(secret)
            while len(self._recent) > _REMEMBERED:
                self._recent.popitem(last=False)

    def __call__(self, text: str) -> str:
        if "$value" in text:
            text = _ENVELOPE_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(2)}", text)
        with self._lock:
            known = [*self._fixed, *self._recent]
        # Longest first, so that a secret containing another is replaced whole.
        for secret in sorted((s for s in known if s in text), key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return text
