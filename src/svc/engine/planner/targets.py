"""Target changes (engine.md §5.2): create, update in place (also: a changed reap policy, or a reaped target
declared again, which recovers it), or replace on a create-only change."""

from __future__ import annotations

from typing import Any

from svc.engine.errors import NonPortableResources, TargetAlreadyExists
from svc.engine.planner.changeset import TargetChange
from svc.engine.planner.inventory import Inventory
from svc.model.forma import Forma, Target


def _changed_keys(old: dict, new: dict) -> set[str]:
    return {key for key in set(old) | set(new) if old.get(key) != new.get(key)}


def _immutable(target: Target, key: str) -> bool:
    hints = target.config_schema.hints if target.config_schema is not None else None
    if not hints or key not in hints:
        return True  # no hint: immutable (ConfigFieldHint defaults to createOnly)
    return hints[key].create_only


def _reaping(target: Target) -> dict[str, Any]:
    reaping = target.reaping
    if reaping is None:
        return {"reap_kind": None, "reap_after_seconds": None}
    return {"reap_kind": reaping.kind,
            "reap_after_seconds": reaping.max_unreachable_seconds if reaping.kind == "after" else None}


def plan_targets(forma: Forma, inventory: Inventory) -> list[TargetChange]:
    changes: list[TargetChange] = []
    for target in forma.targets:
        config = dict(target.config or {})
        schema = target.config_schema.to_json() if target.config_schema is not None else {}
        reap = _reaping(target)
        stored = inventory.targets.get(target.label)
        if stored is None:
            changes.append(TargetChange(target.label, "create", target.namespace, config, schema, target.discoverable,
                                        **reap))
            continue
        if stored.namespace.upper() != target.namespace.upper():
            raise TargetAlreadyExists(
                f"target {target.label!r} exists with namespace {stored.namespace}, not {target.namespace}",
                {"TargetLabel": target.label, "MismatchType": "namespace", "ExistingNamespace": stored.namespace,
                 "FormaNamespace": target.namespace})
        changed = _changed_keys(dict(stored.config), config)
        if any(_immutable(target, key) for key in changed):
            blocking = sorted(f"{r.stack}/{r.type}/{r.label}" for r in inventory.on_target(target.label)
                              if not r.document.get("Schema", {}).get("Portable", False))
            if blocking:
                raise NonPortableResources(
                    f"target {target.label!r}: changing {', '.join(sorted(changed))} replaces the target, but "
                    f"these resources cannot move: {', '.join(blocking)}",
                    {"TargetLabel": target.label, "Resources": blocking})
            changes.append(TargetChange(target.label, "replace", target.namespace, config, schema,
                                        target.discoverable, dict(stored.config), stored.discoverable, **reap))
        elif (changed or stored.discoverable != target.discoverable or dict(stored.config_schema) != schema
              or (stored.reap_kind, stored.reap_after_seconds) != (reap["reap_kind"], reap["reap_after_seconds"])
              or stored.health_state == "reaped"):
            changes.append(TargetChange(target.label, "update", target.namespace, config, schema,
                                        target.discoverable, dict(stored.config), stored.discoverable, **reap,
                                        recovered=stored.health_state == "reaped"))
    return changes
