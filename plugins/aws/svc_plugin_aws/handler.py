"""The per-type handler interface: a native type is one module under ``handlers/``, every other type is served
by the generic Cloud Control handler (``cloudcontrol/``); ``routing`` declares which is which.

A native handler is a class with ``type_name`` (the CloudFormation type) and five plain methods over
PascalCase property dicts. It raises boto3's own exceptions freely (``Plugin`` maps them to error codes)
and knows nothing of request tokens, journals, pages or progress: the ``Plugin`` does that once for all.

A provider that finishes a change after its call returns (Cloud Control) overrides the ``start_*`` methods
and ``follow`` instead: the call answers ``Started`` with the provider's request to follow, which the
``Plugin`` journals and follows when the agent polls ``status`` — the same polling that waits for a native
resource to be ``ready``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from svc.plugins.sdk import Json, PluginError
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


@dataclass(frozen=True)
class Started:
    """What a mutating call left behind: the resource's native id when known, and the provider's request to
    ``follow`` when the provider finishes the work after the call returned (empty: the work is done)."""

    native_id: str = ""
    request: str = ""


class RequestFailed(PluginError):
    """The provider finished a request a ``start_*`` method returned, and it failed (not a failed call to ask)."""


class Handler:
    """One resource type. Override what it supports; the defaults refuse."""

    type_name: ClassVar[str] = ""
    # True when the provider itself keeps the agent's request token (Cloud Control's ClientToken): a call
    # interrupted before it answered may be sent again with the same token, it cannot act twice.
    provider_keeps_tokens: ClassVar[bool] = False

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

    # -- the calls as the ``Plugin`` makes them: a native handler's work is done when its method returns ------

    def start_create(self, aws: Aws, label: str, properties: Json, token: str) -> Started:
        return Started(self.create(aws, label, properties))

    def start_update(self, aws: Aws, change: Change, token: str) -> Started:
        self.update(aws, change)
        return Started(change.native_id)

    def start_delete(self, aws: Aws, native_id: str, token: str) -> Started:
        self.delete(aws, native_id)
        return Started(native_id)

    def follow(self, aws: Aws, request: str) -> Started:
        """The state of a request a ``start_*`` method returned: ``request`` empty once the provider finished
        it; ``RequestFailed`` when it failed."""
        raise NotImplementedError


def compact(properties: dict[str, Any]) -> Json:
    """The properties without None values (an unset property is absent, not null)."""
    return {key: value for key, value in properties.items() if value is not None}
