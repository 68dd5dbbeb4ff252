"""Stack policy changes (engine.md §5.4): the forma's policies against the stored ones. Pure.

* Inline policies live on a stack and are matched by **type** (a stack has at most one of each): a
  declared one is created (labelled ``<stack>-<type>-<8 id chars>`` when unnamed) or updated (keeping
  its stored label). Reconcile also deletes the stored inline policies the stack no longer declares;
  patch never deletes.
* Standalone policies (the forma's top-level ``Policies``) are created or updated by label; a stack
  refers to one with ``{"$ref": "policy://<label>"}``: newly referenced ones are attached, attached
  ones no longer referenced by a stack of the forma are detached.
* Destroy: inline policies go with their stack (the datastore deletes them with it); a standalone policy
  of the forma is deleted unless stacks outside the forma still use it (``skip``, with those stacks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from svc.engine.errors import InvalidForma
from svc.engine.planner.changeset import PolicyChange
from svc.model.forma import Forma, Policy
from svc.model.records import PolicyRecord

Json = dict[str, Any]
REF_PREFIX = "policy://"
_IDENTITY_KEYS = ("Type", "Label", "$ref")


@dataclass(frozen=True)
class StoredPolicies:
    """The stored policies the planner needs: those of the forma's stacks and the standalone ones."""

    inline: Mapping[str, tuple[PolicyRecord, ...]] = field(default_factory=dict)  # by stack label
    standalone: Mapping[str, PolicyRecord] = field(default_factory=dict)  # by policy label
    attached: Mapping[str, frozenset[str]] = field(default_factory=dict)  # standalone label → stack labels


def policy_config(policy: Policy) -> Json:
    """What is stored of a policy: its wire keys (``TTLSeconds``, ``OnDependents``…) without its identity."""
    return {key: value for key, value in policy.to_json().items() if key not in _IDENTITY_KEYS}


def ref_label(policy: Policy) -> str | None:
    """The label a ``{"$ref": "policy://<label>"}`` names; None for a policy that is not a reference."""
    if policy.ref is None:
        return None
    if not policy.ref.startswith(REF_PREFIX) or len(policy.ref) == len(REF_PREFIX):
        raise InvalidForma(f"policy reference {policy.ref!r} must be {REF_PREFIX}<label>", {"Ref": policy.ref})
    return policy.ref[len(REF_PREFIX):]


def check_policy(policy: Policy, where: str) -> None:
    """Refuses a policy the Pkl schema would not have produced (the API also takes hand-written JSON)."""
    if policy.type is None:
        raise InvalidForma(f"{where}: a policy needs a Type (ttl or auto-reconcile) or a $ref", {"Policy": where})
    if policy.type == "ttl":
        if (policy.ttl_seconds is None) == (policy.expires_at is None):
            raise InvalidForma(f"{where}: a ttl policy sets exactly one of TTLSeconds and ExpiresAt",
                               {"Policy": where})
        if policy.ttl_seconds is not None and policy.ttl_seconds < 1:
            raise InvalidForma(f"{where}: TTLSeconds must be at least 1, not {policy.ttl_seconds}", {"Policy": where})
        if policy.expires_at is not None:
            try:
                moment = datetime.fromisoformat(policy.expires_at)
            except ValueError:
                moment = None
            if moment is None or moment.tzinfo is None:
                raise InvalidForma(f"{where}: ExpiresAt {policy.expires_at!r} is not an RFC 3339 timestamp with "
                                   "a time zone", {"Policy": where})
    elif policy.interval_seconds is None or policy.interval_seconds < 1:
        raise InvalidForma(f"{where}: an auto-reconcile policy needs IntervalSeconds of at least 1",
                           {"Policy": where})


def plan_policies(command: str, mode: str, forma: Forma | None, stored: StoredPolicies,
                  new_id: Callable[[], str]) -> list[PolicyChange]:
    if forma is None:  # destroy by query: policies stay (a stack emptied for good takes its own along)
        return []
    if command == "destroy":
        return _destroy(forma, stored)
    standalone = _standalone(forma, stored)
    changes = [change for change in standalone.values() if change is not None]
    types = {label: record.policy_type for label, record in stored.standalone.items()}
    types |= {str(policy.label): str(policy.type) for policy in forma.policies}
    for stack in forma.stacks:
        changes.extend(_stack(stack.label, stack.policies, mode, stored, types, new_id))
    return changes


def _standalone(forma: Forma, stored: StoredPolicies) -> dict[str, PolicyChange | None]:
    """Each standalone policy of the forma by label, with its change (None when it is unchanged)."""
    out: dict[str, PolicyChange | None] = {}
    for policy in forma.policies:
        where = f"policy {policy.label!r}" if policy.label else "a standalone policy"
        if policy.ref is not None:
            raise InvalidForma(f"{where}: a policy listed on its own cannot be a reference", {"Policy": where})
        if not policy.label:
            raise InvalidForma("a policy listed on its own needs a Label, for stacks to refer to it", {})
        if policy.label in out:
            raise InvalidForma(f"{where} is declared twice", {"PolicyLabel": policy.label})
        check_policy(policy, where)
        config = policy_config(policy)
        old = stored.standalone.get(policy.label)
        if old is None:
            out[policy.label] = PolicyChange(policy.label, str(policy.type), "create", config=config)
        elif old.policy_type != policy.type or dict(old.data) != config:
            out[policy.label] = PolicyChange(policy.label, str(policy.type), "update", config=config,
                                             old_config=dict(old.data))
        else:
            out[policy.label] = None
    return out


def _stack(stack: str, policies: tuple[Policy, ...], mode: str, stored: StoredPolicies, types: dict[str, str],
           new_id: Callable[[], str]) -> list[PolicyChange]:
    changes: list[PolicyChange] = []
    existing = {record.policy_type: record for record in stored.inline.get(stack, ())}
    declared: set[str] = set()
    references: list[str] = []
    for policy in policies:
        label = ref_label(policy)
        if label is not None:
            if label not in types:
                raise InvalidForma(f"stack {stack!r} refers to policy {label!r}, which is neither in the forma nor "
                                   "stored", {"StackLabel": stack, "PolicyLabel": label})
            if label not in references:
                references.append(label)
            continue
        where = f"stack {stack!r}: {policy.type or 'a'} policy"
        check_policy(policy, where)
        kind = str(policy.type)
        if kind in declared:
            raise InvalidForma(f"stack {stack!r} declares two {kind} policies; a stack has at most one of each type",
                               {"StackLabel": stack, "PolicyType": kind})
        declared.add(kind)
        config = policy_config(policy)
        old = existing.get(kind)
        if old is None:
            changes.append(PolicyChange(policy.label or f"{stack}-{kind}-{new_id()[-8:]}", kind, "create", stack,
                                        config))
        elif dict(old.data) != config:
            changes.append(PolicyChange(old.label, kind, "update", stack, config, dict(old.data)))
    if mode == "reconcile":
        changes.extend(PolicyChange(old.label, kind, "delete", stack, old_config=dict(old.data))
                       for kind, old in sorted(existing.items()) if kind not in declared)
    attached = sorted(label for label, stacks in stored.attached.items() if stack in stacks)
    changes.extend(PolicyChange(label, types[label], "attach", stack) for label in references
                   if label not in attached)
    changes.extend(PolicyChange(label, types.get(label, "ttl"), "detach", stack) for label in attached
                   if label not in references)
    return changes


def _destroy(forma: Forma, stored: StoredPolicies) -> list[PolicyChange]:
    leaving = {stack.label for stack in forma.stacks} | {resource.stack for resource in forma.resources}
    changes: list[PolicyChange] = []
    for policy in forma.policies:
        old = stored.standalone.get(policy.label or "")
        if old is None:
            continue
        users = sorted(stored.attached.get(old.label, frozenset()) - leaving)
        if users:
            changes.append(PolicyChange(old.label, old.policy_type, "skip", config=dict(old.data),
                                        referencing_stacks=users))
        else:
            changes.append(PolicyChange(old.label, old.policy_type, "delete", old_config=dict(old.data)))
    return changes
