"""Stack policies in the datastore: what the planner needs, what a command stores, what a stack has.

The planner (``planner.policies``) is pure; this module loads the stored policies it compares against,
writes its changes at submit (outside the DAG, as stacks and targets are), and answers the background
jobs (``expiry``, ``reconciler``): a stack's effective policies and whether a command is busy with it.
All functions are synchronous (run them in a thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from svc.datastore.interface import Datastore
from svc.datastore.query import COMMAND_FIELDS, parse_query
from svc.engine.errors import StackDeletedDuringApply
from svc.engine.planner import PolicyChange, StoredPolicies
from svc.model.forma import Forma
from svc.model.records import CommandRecord, PolicyRecord, PolicyWrite, StackRecord, every_item
from svc.model.states import CommandState

PAGE = 500
_ACTIVE = (CommandState.NOT_STARTED, CommandState.PENDING, CommandState.IN_PROGRESS, CommandState.CANCELING)


def literal(value: str) -> str:
    """``value`` as a query-language value matching exactly that text (no wildcards, any character)."""
    return "".join("\\" + char for char in value)


def stored_policies(store: Datastore, forma: Forma | None,
                    stacks: Mapping[str, StackRecord] | None = None) -> StoredPolicies:
    """The stored policies a plan of ``forma`` compares against: the inline ones of its stacks, every standalone
    one, and the stacks each standalone one is attached to (all of them, in one query: a destroy of the forma's
    standalone policies must know which other stacks still use them). ``stacks``: stored stacks by label, the
    forma's among them, when the caller has read them already."""
    if forma is None or not (forma.policies or forma.stacks):
        return StoredPolicies()
    named = dict.fromkeys(stack.label for stack in forma.stacks)
    if stacks is None:
        stacks = {stack.label: stack for stack in store.stacks_named(named)}
    stored = [stacks[label] for label in named if label in stacks]
    if not store.has_live_policies():
        return StoredPolicies({stack.label: () for stack in stored})
    attached: dict[str, set[str]] = {}
    for policy, stack in store.policy_attachments():
        attached.setdefault(policy, set()).add(stack)
    held = store.policies_of_stacks(stack.id for stack in stored)
    return StoredPolicies({stack.label: tuple(held[stack.id].inline) for stack in stored},
                          {p.label: p for p in every_item(lambda c: store.list_policies(cursor=c, limit=PAGE))},
                          {label: frozenset(users) for label, users in attached.items()})


def persist_policies(store: Datastore, changes: Iterable[PolicyChange], command_id: str) -> None:
    """Writes a command's policy changes, after its stacks exist. A stack gone meanwhile fails the submit."""

    def stack_id(label: str) -> str:
        stack = store.get_stack(label)
        if stack is None:
            raise StackDeletedDuringApply(f"stack {label!r} was deleted while this command was submitted; "
                                          "apply again", {"StackLabel": label})
        return stack.id

    def standalone(label: str) -> PolicyRecord:
        policy = store.get_policy(label)
        if policy is None:  # the planner refuses references to unknown policies: only a concurrent delete
            raise StackDeletedDuringApply(f"policy {label!r} was deleted while this command was submitted; "
                                          "apply again", {"PolicyLabel": label})
        return policy

    for change in changes:
        owner = stack_id(change.stack) if change.stack is not None and change.operation in (
            "create", "update", "delete") else None
        if change.operation in ("create", "update"):
            store.put_policy(PolicyWrite(change.label, change.policy_type, change.config or {}, owner),
                             command_id=command_id)
        elif change.operation == "delete":
            found = store.get_policy(change.label, owner)
            if found is not None:
                store.delete_policy(found.id, command_id=command_id)
        elif change.operation == "attach":
            store.attach_policy(stack_id(str(change.stack)), standalone(change.label).id)
        elif change.operation == "detach":
            store.detach_policy(stack_id(str(change.stack)), standalone(change.label).id)


@dataclass(frozen=True)
class Effective:
    """A stack's policy of one type: its inline one, else the first standalone one attached."""

    record: PolicyRecord

    @property
    def interval(self) -> timedelta:
        return timedelta(seconds=int(self.record.data.get("IntervalSeconds") or 0))

    @property
    def on_dependents(self) -> str:
        return str(self.record.data.get("OnDependents") or "abort")

    def deadline(self, stack: StackRecord) -> datetime:
        """When a TTL policy expires ``stack``: ``ExpiresAt``, else the stack's creation plus the TTL (the
        stack's first version, so re-applying the forma does not push it back)."""
        expires_at = self.record.data.get("ExpiresAt")
        if expires_at:
            return datetime.fromisoformat(str(expires_at))
        return stack.created_at + timedelta(seconds=int(self.record.data.get("TTLSeconds") or 0))


def effective_policies(store: Datastore, stack: StackRecord) -> dict[str, Effective]:
    """The stack's effective policy per type (``ttl``, ``auto-reconcile``)."""
    found: dict[str, Effective] = {}
    held = store.policies_of_stacks([stack.id])[stack.id]
    for policy in [*held.inline, *held.attached]:
        found.setdefault(policy.policy_type, Effective(policy))
    return found


def policies_in_force(store: Datastore, policy_type: str) -> dict[str, Effective]:
    """Stack id → its effective policy of ``policy_type`` (as ``effective_policies`` finds it), for every stack
    that has one: the background jobs' question, answered in one query whatever the number of stacks."""
    found: dict[str, Effective] = {}
    for stack_id, policy in store.policies_in_force(policy_type):
        found.setdefault(stack_id, Effective(policy))
    return found


def active_command(store: Datastore, stack: str) -> CommandRecord | None:
    """A command (of any source) still changing a resource of ``stack``, if there is one."""
    states = " ".join(f"status:{state}" for state in _ACTIVE)
    query = parse_query(f"stack:{literal(stack)} {states}", COMMAND_FIELDS)
    found = store.list_commands(query, sources=None, limit=1).items
    return found[0] if found else None


def all_stacks(store: Datastore) -> list[StackRecord]:
    return every_item(lambda c: store.list_stacks(cursor=c, limit=PAGE))
