"""The opaque fields of a schema: where its secrets are, at any depth (one definition for every caller).

A schema names its opaque values by path (``Schema.opaque_paths``, derived from the property types by
``@svc/svc.pkl``): dotted wire keys through sub-resources, ``*`` for a mapping's keys, and no step for a
listing's elements (``Db.Password``, ``Users.Token``, ``Routes.*.Key``, ``Env.*``). A schema without them
(stored before they existed) has its dotted ``opaque`` hint keys instead, where a mapping level cannot be told.

``OpaqueFields`` is those paths as a tree that a walk over property values descends along: ``at(key)`` for a
member (a list index stays at the same node), ``secret`` where the value itself is a secret.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from svc.schema.model import Schema

ANY_KEY = "*"  # a mapping level: every key of the user's mapping


class OpaqueFields:
    """A node of a schema's opaque paths; ``NONE`` (no secret at or below) for anything else."""

    __slots__ = ("_below", "secret")

    def __init__(self, secret: bool = False, below: Mapping[str, OpaqueFields] | None = None) -> None:
        self.secret = secret
        self._below: Mapping[str, OpaqueFields] = below or {}

    @classmethod
    def of_paths(cls, paths: Iterable[str]) -> OpaqueFields:
        tree: dict[str, Any] = {}
        for path in paths:
            node = tree
            for step in path.split("."):
                node = node.setdefault(step, {})
            node[""] = True  # the value at this path is a secret
        return cls._built(tree)

    @classmethod
    def _built(cls, tree: dict[str, Any]) -> OpaqueFields:
        below = {step: cls._built(sub) for step, sub in tree.items() if step != ""}
        return cls(bool(tree.get("")), below) if tree.get("") or below else NONE

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
    def empty(self) -> bool:
        """No secret at or below this node (a walk need not look further for schema secrets)."""
        return not self.secret and not self._below

    def paths(self, prefix: str = "") -> list[str]:
        """The paths this node holds, sorted (for messages and tests)."""
        out = [prefix] if self.secret and prefix else []
        for step, node in sorted(self._below.items()):
            out += node.paths(f"{prefix}.{step}" if prefix else step)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueFields) and self.paths() == other.paths() and self.secret == other.secret

    def __hash__(self) -> int:
        return hash((self.secret, tuple(self.paths())))

    def __repr__(self) -> str:
        return f"OpaqueFields({self.paths()!r})"


NONE = OpaqueFields()


def opaque_fields(schema: Schema) -> OpaqueFields:
    """Where ``schema``'s secrets are: its opaque paths, or (a schema stored before it had them) the keys
    of its ``opaque`` hints."""
    return _tree(schema.opaque_paths or tuple(key for key, hint in schema.hints.items() if hint.opaque))


@functools.lru_cache(maxsize=256)  # a handful of types serve thousands of changes; nodes are only read
def _tree(paths: tuple[str, ...]) -> OpaqueFields:
    return OpaqueFields.of_paths(paths)
