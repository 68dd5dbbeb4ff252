"""A read-only mapping whose values are made on first use.

An agent serving the full AWS package knows ~1,700 resource types, but a command touches a handful: validating
every type's schema at start cost more than everything else the start did. Keys are known at once (``in``,
iteration and ``len`` make nothing); a value is made when it is first read, once, and kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

V = TypeVar("V")
W = TypeVar("W")


class _Later(Generic[V]):
    """A value not made yet: what makes it."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], V]) -> None:
        self.make = make


class LazyMapping(Mapping[str, V]):
    """Values made on first read by their maker; merging and selecting keys make none (see module doc)."""

    __slots__ = ("_entries",)

    def __init__(self, makers: Mapping[str, Callable[[], V]] | None = None) -> None:
        self._entries: dict[str, V | _Later[V]] = {key: _Later(make) for key, make in (makers or {}).items()}

    @classmethod
    def of(cls, mapping: Mapping[str, V]) -> LazyMapping[V]:
        """``mapping`` itself when it is lazy, else its values as made ones."""
        if isinstance(mapping, LazyMapping):
            return mapping
        lazy: LazyMapping[V] = cls()
        lazy._entries = dict(mapping)
        return lazy

    def __getitem__(self, key: str) -> V:
        entry = self._entries[key]
        if isinstance(entry, _Later):
            # Two threads may both make it; either value is right, as a maker always makes the same.
            entry = self._entries[key] = entry.make()
        return entry

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def made(self) -> int:
        """How many values have been made (tests and benches check that reading keys makes none)."""
        return sum(1 for entry in self._entries.values() if not isinstance(entry, _Later))

    def merged(self, other: Mapping[str, V]) -> LazyMapping[V]:
        """A new mapping with this one's entries and ``other``'s (which win), made or not as they were."""
        lazy: LazyMapping[V] = LazyMapping()
        lazy._entries = {**self._entries, **LazyMapping.of(other)._entries}
        return lazy

    def selected(self, keys: Iterable[str]) -> LazyMapping[V]:
        """A new mapping with the entries of ``keys`` only (each must be a key of this one)."""
        lazy: LazyMapping[V] = LazyMapping()
        lazy._entries = {key: self._entries[key] for key in keys}
        return lazy

    def mapped(self, function: Callable[[V], W]) -> LazyMapping[W]:
        """A new mapping whose value of a key is ``function`` of this one's, made when first read."""
        return LazyMapping({key: (lambda key=key: function(self[key])) for key in self._entries})
