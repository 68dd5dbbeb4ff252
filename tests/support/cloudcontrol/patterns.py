"""Short, deterministic strings that match a regular expression: values for the registry's ``pattern``s.

A walk over Python's own parse of the pattern (``sre_parse``: the only parser of Python's regex syntax there
is; libraries such as rstr use it too, but pick at random, from sets in hash order, and up to 100 repetitions,
which makes neither short nor reproducible values). The walk takes the fewest repetitions, the first branch
and the first allowed character in a readable order; ``variant`` picks later characters and branches to give a
second, different value; ``extra`` adds repetitions when a ``minLength`` asks for a longer string. The caller
checks the result with ``re.search``: lookarounds and backreferences are not solved, only tried.
"""

from __future__ import annotations

import string
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Python's regex parser and its opcodes, under their public (deprecated since 3.11, still shipped) names; their
# only other names are the private re._parser and re._constants.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants as sre
    import sre_parse

from .validation import compiled

# Readable characters first, so a value reads like a name; then the rest of printable ASCII.
_PREFERRED = (string.ascii_lowercase + string.digits + string.ascii_uppercase + "-_.:/ "
              + "".join(ch for ch in string.printable if ch not in string.ascii_letters + string.digits + "-_.:/ "))
_CATEGORIES = {
    sre.CATEGORY_DIGIT: lambda ch: ch.isdigit(),
    sre.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    sre.CATEGORY_SPACE: lambda ch: ch.isspace(),
    sre.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    sre.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
    sre.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
}
_TRIES = 6


@dataclass
class _Walk:
    variant: int
    extra: int  # repetitions still to add beyond each repeat's minimum
    groups: dict[int, str] = field(default_factory=dict)

    def pick(self, candidates: list[str]) -> str:
        if not candidates:
            raise _NoMatch
        return candidates[self.variant % len(candidates)]

    def emit(self, items: Any) -> str:
        return "".join(self.item(op, value) for op, value in items)

    def item(self, op: Any, value: Any) -> str:
        if op is sre.LITERAL:
            return chr(value)
        if op is sre.NOT_LITERAL:
            return self.pick([ch for ch in _PREFERRED if ch != chr(value)])
        if op is sre.ANY:
            return self.pick([ch for ch in _PREFERRED if ch != "\n"])
        if op is sre.IN:
            return self.pick([ch for ch in _PREFERRED if _in_class(ch, value)])
        if op is sre.CATEGORY:
            return self.pick([ch for ch in _PREFERRED if _CATEGORIES.get(value, lambda _: False)(ch)])
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = value
            high = low + 1000 if high is sre.MAXREPEAT else high
            count = low + min(self.extra, high - low)
            self.extra -= count - low
            return "".join(self.emit(body) for _ in range(count))
        if op is sre.SUBPATTERN:
            group, _add_flags, _del_flags, body = value
            text = self.emit(body)
            if group is not None:
                self.groups[group] = text
            return text
        if op is sre.ATOMIC_GROUP:
            return self.emit(value)
        if op is sre.BRANCH:
            branches = value[1]
            return self.emit(branches[self.variant % len(branches)])
        if op is sre.GROUPREF:
            return self.groups.get(value, "")
        if op is sre.GROUPREF_EXISTS:
            _group, yes, _no = value
            return self.emit(yes)
        return ""  # anchors (AT) and lookarounds (ASSERT, ASSERT_NOT) add no characters


class _NoMatch(Exception):
    """A character class no readable character is in."""


def _in_class(ch: str, items: list[tuple[Any, Any]]) -> bool:
    negate = False
    found = False
    for op, value in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            found = found or ch == chr(value)
        elif op is sre.RANGE:
            found = found or value[0] <= ord(ch) <= value[1]
        elif op is sre.CATEGORY:
            found = found or _CATEGORIES.get(value, lambda _: False)(ch)
    return found != negate


def _candidates(pattern: str, variant: int, min_length: int) -> Iterator[str]:
    parsed = sre_parse.parse(pattern)
    # A later variant also tries one repetition more, so that fixed text with optional parts differs too.
    bonuses = (1, 0) if variant else (0,)
    for attempt in range(_TRIES):
        for bonus in bonuses:
            try:
                shortest = _Walk(variant + attempt, bonus).emit(parsed)
                yield shortest
                if len(shortest) < min_length:
                    yield _Walk(variant + attempt, bonus + min_length - len(shortest)).emit(parsed)
            except (_NoMatch, RecursionError):
                continue


def matching_string(pattern: str, *, min_length: int = 0, max_length: int | None = None,
                    variant: int = 0) -> str | None:
    """A short string that ``re.search``es ``pattern`` within the length bounds, or None when none was found
    (or the pattern is a Java one Python cannot compile). Different ``variant``s mostly give different strings."""
    regex = compiled(pattern)
    if regex is None:
        return None
    for candidate in _candidates(pattern, variant, min_length):
        if regex.search(candidate) and min_length <= len(candidate) <= (max_length or len(candidate)):
            return candidate
    return None


def plain_string(*, min_length: int = 0, max_length: int | None = None, variant: int = 0, stem: str = "example"
                 ) -> str:
    """A readable string within the length bounds for a property with no (checkable) pattern."""
    text = stem if variant == 0 else f"{stem}{variant + 1}"
    if len(text) < min_length:
        text += "x" * (min_length - len(text))
    return text[:max_length] if max_length is not None else text

