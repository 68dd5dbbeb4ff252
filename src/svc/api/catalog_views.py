"""Stacks, targets and policies in the reference's JSON shapes.

Policy records hold the engine's policy document in ``data`` with the forma's wire keys (``TTLSeconds``,
``OnDependents``, ``IntervalSeconds``…); the view adds ``Type`` and ``Label``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from svc.datastore import Datastore
from svc.model import wire
from svc.model.records import PolicyRecord, StackRecord, TargetRecord

_POLICY_PAGE = 200


def policy_json(policy: PolicyRecord) -> dict[str, Any]:
    return {**dict(policy.data), "Type": policy.policy_type, "Label": policy.label}


def stack_policies(datastore: Datastore, stacks: Sequence[StackRecord], *, attached_in_full: bool = False
                   ) -> list[tuple[list[dict[str, Any]], list[PolicyRecord]]]:
    """For each of ``stacks``, in order: its inline policies rendered in full, plus for each attached standalone
    policy ``{"$ref": "policy://…"}`` (as a forma refers to it; the policies are returned too, for the Forma's
    top-level ``Policies``) or, ``attached_in_full``, the policy itself (``GET /stacks``). Synchronous."""
    held = datastore.policies_of_stacks(stack.id for stack in stacks)
    answers = []
    for stack in stacks:
        policies = held[stack.id]
        rendered = [policy_json(policy) for policy in policies.inline]
        rendered.extend(policy_json(policy) if attached_in_full else {"$ref": f"policy://{policy.label}"}
                        for policy in policies.attached)
        answers.append((rendered, policies.attached))
    return answers


def standalone_policies(datastore: Datastore) -> list[dict[str, Any]]:
    """``GET /policies``: each standalone policy as ``{Label, Type, Config, AttachedStacks?}``. Synchronous."""
    users: dict[str, list[str]] = {}
    for policy_label, stack_label in datastore.policy_attachments():
        users.setdefault(policy_label, []).append(stack_label)
    listed: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        policies = datastore.list_policies(cursor=cursor, limit=_POLICY_PAGE)
        for policy in policies.items:
            listed.append(wire.PolicyView(Label=policy.label, Type=policy.policy_type, Config=policy_json(policy),
                                          AttachedStacks=users.get(policy.label) or None).to_json())
        if (cursor := policies.next_cursor) is None:
            return listed


def stack_json(stack: StackRecord, policies: list[dict[str, Any]]) -> dict[str, Any]:
    return wire.StackView(ID=stack.id, Label=stack.label, Description=stack.description or None,
                          Policies=policies or None, CreatedAt=stack.created_at).to_json()


def target_json(target: TargetRecord) -> dict[str, Any]:
    return wire.TargetView(Label=target.label, Namespace=target.namespace, Config=dict(target.config) or None,
                           ConfigSchema=dict(target.config_schema) or None, Discoverable=target.discoverable,
                           Version=target.version, Reaping=reaping_json(target)).to_json()


def reaping_json(target: TargetRecord) -> dict[str, Any] | None:
    """The target's reap policy as the forma declared it (``Reaping``); None when it declared none."""
    if target.reap_kind == "never":
        return {"Kind": "never"}
    if target.reap_kind == "after":
        return {"Kind": "after", "MaxUnreachableSeconds": target.reap_after_seconds}
    return None
