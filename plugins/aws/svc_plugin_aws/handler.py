"""The per-type handler interface and registry: a resource type is one module under ``handlers/``.

A handler is a class with ``type_name`` (the CloudFormation type) and five plain methods over
PascalCase property dicts. It raises boto3's own exceptions freely (``Plugin`` maps them to error codes)
and knows nothing of request tokens, journals, pages or progress: the ``Plugin`` does that once for all.
``@register`` adds an instance to the registry; ``handlers/__init__.py`` imports every module of the package.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from svc.plugins.sdk import Json
from svc_plugin_aws.session import Aws


@dataclass(frozen=True)
class Change:
    """An update: the full desired properties, what was known before, and the top-level keys the patch touches."""

    native_id: str
    prior: Json
    desired: Json
    patch: list[Json] = field(default_factory=list)

    @property
    def touched(self) -> frozenset[str]:
        """Top-level property names an operation of the patch adds, replaces or removes."""
        names = set()
        for op in self.patch:
            steps = str(op.get("path", "")).split("/")
            if len(steps) > 1:
                names.add(steps[1].replace("~1", "/").replace("~0", "~"))
        return frozenset(names)

    def wants(self, key: str) -> bool:
        return key in self.touched


class Handler:
    """One resource type. Override what it supports; the defaults refuse."""

    type_name: ClassVar[str] = ""

    def create(self, aws: Aws, label: str, properties: Json) -> str:
        """Creates the resource; returns its native id (the value at the schema's identifier)."""
        raise NotImplementedError

    def read(self, aws: Aws, native_id: str) -> Json | None:
        """The resource's properties (PascalCase, as the schema names them), or None when it does not exist."""
        raise NotImplementedError

    def update(self, aws: Aws, change: Change) -> None:
        """Brings the mutable properties of ``change.touched`` to ``change.desired`` (absent: AWS's default)."""
        raise NotImplementedError

    def delete(self, aws: Aws, native_id: str) -> None:
        """Deletes the resource; a not-found error from AWS counts as done."""
        raise NotImplementedError

    def list(self, aws: Aws, filters: dict[str, str]) -> Iterable[str]:
        """Every native id of the type in the target (``filters``: a parent's list parameter, e.g. ``VpcId``)."""
        raise NotImplementedError

    def ready(self, aws: Aws, native_id: str, properties: Json) -> bool:
        """Whether a created or updated resource is usable; False makes the agent poll ``status``."""
        return True


REGISTRY: dict[str, Handler] = {}


def register(cls: type[Handler]) -> type[Handler]:
    """Class decorator: one instance of the handler serves every call of its type."""
    if not cls.type_name:
        raise ValueError(f"{cls.__name__} has no type_name")
    if cls.type_name in REGISTRY:
        raise ValueError(f"{cls.type_name} is handled twice ({type(REGISTRY[cls.type_name]).__name__}, "
                         f"{cls.__name__})")
    REGISTRY[cls.type_name] = cls()
    return cls


def compact(properties: dict[str, Any]) -> Json:
    """The properties without None values (an unset property is absent, not null)."""
    return {key: value for key, value in properties.items() if value is not None}
