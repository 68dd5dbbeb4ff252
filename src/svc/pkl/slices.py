"""A module's JSON output read from ``pkl server`` with its one large list in slices.

The server copies an answer several times as it encodes it, and each large copy costs a collection of a heap
that still holds every object the module made: a forma of 100,000 resources took 2.4 s more (and 500 MiB more of
the server's memory) as one 24 MB answer than as slices of 2,000 resources, the descriptors of the AWS registry
3.5 s more as one 18 MB answer. Cutting the text after it is made does not help (Pkl's ``substring`` counts code
points from the start each time), so the list is rendered a slice at a time, by the module's own renderer, in
one evaluator (``PklServer.converse``: the module is evaluated once).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from svc import jsontext
from svc.pkl.server import Conversation

SLICE = 2_000  # items of the list per answer (a forma's resources, ~240 bytes each); no more come in one answer


@dataclass(frozen=True)
class Sliced:
    """The output's text without the list at ``path`` (None when the list is the output's value: ``path`` ""), and
    the list's slices."""

    path: str
    rest: str | None
    slices: list[str]


def output_in_slices(path: str = "", size: int | None = None) -> Callable[[], Conversation[str | Sliced]]:
    """The conversation that reads the module's output: its whole text, or, when the list at ``path`` of
    ``output.value`` (a property name; "" for the value itself) holds more than ``size`` items (default
    ``SLICE``), a ``Sliced`` of that many items each."""
    size = size or SLICE
    items = f"output.value.{path}" if path else "output.value"
    is_list = (f'output.value is Dynamic && output.value.hasProperty("{path}") && {items} is List' if path
               else "output.value is List")
    whole_or_count = f"if ({is_list} && {items}.length > {size}) {items}.length else output.text"

    def conversation() -> Conversation[str | Sliced]:
        first = yield whole_or_count
        if not isinstance(first, int):
            return first  # the whole text
        rest = (yield f"output.renderer.renderValue((output.value) {{ {path} = List() }})") if path else None
        slices = []
        for start in range(0, first, size):
            slices.append((yield f"output.renderer.renderValue({items}.sublist({start}, {min(start + size, first)}))"))
        return Sliced(path, rest, slices)

    return conversation


def joined(answer: str | Sliced, parse: Callable[[str], Any] = jsontext.loads) -> Any:
    """The output an ``output_in_slices`` conversation read, parsed by ``parse`` (a slice's text is a JSON list);
    ValueError or TypeError for one that is not the JSON it should be."""
    if isinstance(answer, str):
        return parse(answer)
    items = [item for text in answer.slices for item in parse(text)]
    if answer.rest is None:
        return items
    document = parse(answer.rest)
    document[answer.path] = items
    return document
