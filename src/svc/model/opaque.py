"""The opaque fields of a schema: where its secrets are, at any depth (one definition for every caller).

A schema names its opaque values by path (``Schema.opaque_paths``, derived from the property types by
``@svc/svc.pkl``): dotted wire keys through sub-resources, ``*`` for a mapping's keys, and no step for a
listing's elements (``Db.Password``, ``Users.Token``, ``Routes.*.Key``, ``Env.*``). A schema without them
(stored before they existed) has its dotted ``opaque`` hint keys instead, where a mapping level cannot be told.

``OpaqueFields`` is those paths as a tree that a walk over property values descends along: ``at(key)`` for a
member (a list index stays at the same node), ``secret`` where the value itself is a secret. A
self-referencing sub-resource makes it a graph (``root.children=root``: a child is shaped like its parent).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from svc.model.schema import Schema

ANY_KEY = "*"  # a mapping level: every key of the user's mapping


class OpaqueFields:
    """A node of a schema's opaque paths; ``NONE`` (no secret at or below) for anything else."""

    __slots__ = ("_below", "secret", "source")

    def __init__(self, secret: bool = False, below: dict[str, OpaqueFields] | None = None,
                 source: tuple[str, ...] = ()) -> None:
        self.secret = secret
        self._below: dict[str, OpaqueFields] = below if below is not None else {}
        self.source = source  # the paths it was made of (its root only)

    @classmethod
    def of_paths(cls, paths: Iterable[str]) -> OpaqueFields:
        """The tree of ``paths``; ``a.b=a`` makes the node at ``a.b`` the one at ``a`` (a cycle: a
        self-referencing sub-resource's secrets are found at every depth)."""
        paths = tuple(sorted(set(paths)))
        root = cls(source=paths)
        links = []
        for path in paths:
            where, _, target = path.partition("=")
            if target:
                links.append((where, target))
            else:
                root._grown(where).secret = True
        for where, target in links:
            *parent, last = where.split(".")
            root._grown(".".join(parent))._below[last] = root._grown(target)
        return root if paths else NONE

    def _grown(self, path: str) -> OpaqueFields:
        """The node at ``path``, made on the way while the tree is built."""
        node = self
        for step in path.split(".") if path else ():
            node = node._below.setdefault(step, OpaqueFields())
        return node

    def at(self, key: str | int) -> OpaqueFields:
        """The node of a member: a list's element stays here; a key is a field, else a mapping's key."""
        if isinstance(key, int):
            return self
        return self._below.get(key) or self._below.get(ANY_KEY) or NONE

    def at_path(self, steps: Iterable[str | int]) -> OpaqueFields:
        """The node of a nested member; a secret's members are secret too (the value as a whole is one)."""
        node = self
        for step in steps:
            if node.secret:
                return node
            node = node.at(step)
        return node

    @property
    def holds_secret(self) -> bool:
        """Whether the value here is a secret or has one inside."""
        return self.secret or bool(self._below)

    def __repr__(self) -> str:
        return f"OpaqueFields({list(self.source)!r})" if self.source else f"OpaqueFields(secret={self.secret})"


NONE = OpaqueFields()


def opaque_fields(schema: Schema) -> OpaqueFields:
    """Where ``schema``'s secrets are: its opaque paths, or (a schema stored before it had them) the keys
    of its ``opaque`` hints."""
    return _tree(schema.opaque_paths or tuple(key for key, hint in schema.hints.items() if hint.opaque))


def document_opaque_fields(schema: Mapping[str, Any]) -> OpaqueFields:
    """``opaque_fields`` of a descriptor's JSON document as Pkl renders it (``OpaquePaths``, ``Hints``), read
    without the model: what a command that sends a forma unvalidated checks for secrets. ``TypeError`` if the
    document is not a descriptor's shape."""
    paths = schema.get("OpaquePaths") or ()
    hints = schema.get("Hints") or {}
    if not isinstance(paths, list | tuple) or not isinstance(hints, Mapping):
        raise TypeError("not a descriptor")
    if not paths:
        paths = [key for key, hint in hints.items() if hint.get("Opaque") is True]
    if not all(isinstance(path, str) for path in paths):
        raise TypeError("not a descriptor")
    return _tree(tuple(paths))


@functools.lru_cache(maxsize=256)  # a handful of types serve thousands of changes; nodes are only read
def _tree(paths: tuple[str, ...]) -> OpaqueFields:
    return OpaqueFields.of_paths(paths)
