"""Drift: what changed in a stack since its last reconcile, by anything but that reconcile.

A version written in the stack after the stack's most recent reconcile apply began, by another command
(a synchronization pass storing an out-of-band change, a patch, an adoption…), is a modification. The
reconcile drift gate (``inventory_reads``) and ``GET /stacks/{stack}/drift`` read the same list;
the endpoint adds each resource's properties then and now and the patch between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.datastore.interface import Datastore
from svc.model import values
from svc.model.records import CommandRecord, ResourceVersion, every_item

Json = dict[str, Any]
_PAGE = 200


@dataclass(frozen=True)
class Drifted:
    """One modified resource: its latest version, and its last version as of the reconcile (None when it
    did not exist then)."""

    current: ResourceVersion
    baseline: ResourceVersion | None

    @property
    def operation(self) -> str:
        """``update`` for any write, ``delete`` for a tombstone (as the reference reports them)."""
        return "delete" if self.current.deleted else "update"


def modified(store: Datastore, stack: str, since: CommandRecord | None = None) -> list[ResourceVersion]:
    """The latest version of each resource changed in ``stack`` since its last reconcile (``since``, looked
    up when not given); none when the stack was never reconciled."""
    last = since or store.last_reconcile(stack)
    if last is None:
        return []
    latest: dict[str, ResourceVersion] = {}
    for version in store.list_resource_changes(stack, last.start_ts, exclude_command=last.id):
        latest[version.ksuid] = version  # oldest first: the last one wins
    return list(latest.values())


def out_of_band(store: Datastore, changed: list[ResourceVersion]) -> set[str]:
    """The ksuids among ``changed`` (latest versions) stored by synchronization: changes made outside svc."""
    commands = {v.command_id for v in changed if v.command_id}
    sync = {c for c in commands if (command := store.get_command(c)) is not None and command.command == "sync"}
    return {v.ksuid for v in changed if v.command_id in sync}


def drift(store: Datastore, stack: str) -> list[Drifted]:
    """The stack's modifications with their baselines (the state the last reconcile left)."""
    last = store.last_reconcile(stack)
    if last is None:
        return []
    out: list[Drifted] = []
    for current in modified(store, stack, last):
        history = every_item(lambda c, k=current.ksuid: store.resource_history(k, cursor=c, limit=_PAGE))
        baseline = None
        for version in history:
            if version.command_id == last.id or version.valid_from <= last.start_ts:
                baseline = None if version.deleted else version
        out.append(Drifted(current, baseline))
    return out


# -- the patch ----------------------------------------------------------------------------------------------

def observed(properties: Json) -> Json:
    """Properties as the provider has them: references and templates as their values, secrets as their
    stored hashes (the envelope, so a reader can tell a secret from a value)."""

    def convert(envelope: Json) -> Any:
        if envelope.get("$hashed") or values.is_opaque(envelope):
            return {k: v for k, v in envelope.items() if k in ("$value", "$visibility", "$hashed")}
        return values.plain(envelope)

    return values.map_envelopes(properties, convert)


def _escape(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _equal(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b if not isinstance(a, (dict, list)) else a == b


def _secret(value: Any) -> bool:
    return isinstance(value, dict) and (bool(value.get("$hashed")) or values.is_opaque(value))


def drift_patch(old: Any, new: Any, path: str = "") -> list[Json]:
    """RFC 6902 operations that turn ``old`` into ``new``: objects key by key, arrays by position (surplus
    elements removed from the end), anything else (secrets included) replaced whole."""
    if isinstance(old, dict) and isinstance(new, dict) and not (_secret(old) or _secret(new)):
        ops: list[Json] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": f"{path}/{_escape(key)}", "value": value})
            else:
                ops.extend(drift_patch(old[key], value, f"{path}/{_escape(key)}"))
        return ops
    if isinstance(old, list) and isinstance(new, list):
        ops = []
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            ops.extend(drift_patch(a, b, f"{path}/{index}"))
        ops.extend({"op": "add", "path": f"{path}/{index}", "value": new[index]}
                   for index in range(len(old), len(new)))
        ops.extend({"op": "remove", "path": f"{path}/{index}"} for index in reversed(range(len(new), len(old))))
        return ops
    if _equal(old, new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _at(document: Any, pointer: str) -> Any:
    """The value at an RFC 6901 pointer that ``drift_patch`` wrote (so it exists in ``document``)."""
    for token in pointer.split("/")[1:]:
        document = document[int(token)] if isinstance(document, list) else document[_unescape(token)]
    return document


def drift_changes(old: Any, new: Any) -> list[Json]:
    """``drift_patch`` with each change's value before it as well: ``{Path, Old?, New?}`` (no ``Old`` for an
    added value, no ``New`` for a removed one), what ``svc drift`` shows as ``old → new``."""
    changes: list[Json] = []
    for op in drift_patch(old, new):
        change: Json = {"Path": op["path"] or "/"}
        if op["op"] != "add":
            change["Old"] = _at(old, op["path"])
        if op["op"] != "remove":
            change["New"] = op["value"]
        changes.append(change)
    return changes
