"""Stacks, targets and policies in the reference's JSON shapes.

Policy records hold the engine's policy document in ``data`` with the forma's wire keys (``TTLSeconds``,
``OnDependents``, ``IntervalSeconds``…); the view adds ``Type`` and ``Label``.
"""

from __future__ import annotations

from typing import Any

from svc.datastore import Datastore
from svc.model import wire
from svc.model.records import PolicyRecord, StackRecord, TargetRecord

_POLICY_PAGE = 200


def policy_json(policy: PolicyRecord) -> dict[str, Any]:
    return {**dict(policy.data), "Type": policy.policy_type, "Label": policy.label}


def stack_policies(datastore: Datastore, stack: StackRecord, *, attached_in_full: bool = False
                   ) -> tuple[list[dict[str, Any]], list[PolicyRecord]]:
    """The stack's inline policies rendered in full, plus for each attached standalone policy
    ``{"$ref": "policy://…"}`` (as a forma refers to it; the policies are returned too, for the Forma's top-level
    ``Policies``) or, ``attached_in_full``, the policy itself (``GET /stacks``). Synchronous."""
    rendered: list[dict[str, Any]] = []
    attached: list[PolicyRecord] = []
    cursor: str | None = None
    while True:
        page = datastore.list_policies(stack_id=stack.id, cursor=cursor, limit=_POLICY_PAGE)
        rendered.extend(policy_json(policy) for policy in page.items)
        if (cursor := page.next_cursor) is None:
            break
    while True:
        page = datastore.list_attached_policies(stack.id, cursor=cursor, limit=_POLICY_PAGE)
        attached.extend(page.items)
        rendered.extend(policy_json(policy) if attached_in_full else {"$ref": f"policy://{policy.label}"}
                        for policy in page.items)
        if (cursor := page.next_cursor) is None:
            break
    return rendered, attached


def standalone_policies(datastore: Datastore) -> list[dict[str, Any]]:
    """``GET /policies``: each standalone policy as ``{Label, Type, Config, AttachedStacks?}``. Synchronous."""
    users: dict[str, list[str]] = {}
    cursor: str | None = None
    while True:
        page = datastore.list_stacks(cursor=cursor, limit=_POLICY_PAGE)
        for stack in page.items:
            for policy in stack_policies(datastore, stack)[1]:
                users.setdefault(policy.id, []).append(stack.label)
        if (cursor := page.next_cursor) is None:
            break
    listed: list[dict[str, Any]] = []
    while True:
        policies = datastore.list_policies(cursor=cursor, limit=_POLICY_PAGE)
        for policy in policies.items:
            listed.append(wire.PolicyView(Label=policy.label, Type=policy.policy_type, Config=policy_json(policy),
                                          AttachedStacks=users.get(policy.id) or None).to_json())
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
