"""A plan's fingerprint: what a submission must still plan to go ahead (a saved plan, or the plan a user confirmed).

One entry per thing the plan changes (``resource stack/Type/label``, ``target``, ``stack``, ``policy``, and
``baseline`` for a reconcile's stack whose drift it takes in), each ``operation:digest`` of the change as planned:
the stored state it starts from and the state it sets (secrets as their hashes), so the same forma planned
against an inventory that moved in any way that matters gives another fingerprint. Ids minted while planning
(new resources' ksuids, replace groups, unnamed policies' labels) are left out, so planning the same forma
against the same inventory twice gives the same fingerprint. Pure.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from svc.engine.planner.changeset import Changeset, ResourceChange

Fingerprint = dict[str, str]
_REF = re.compile(r"svc://([0-9A-Za-z]+)#")
_MINTED = ("ksuid", "group_id")  # fresh per plan


def fingerprint(changeset: Changeset, shown: Sequence[ResourceChange]) -> Fingerprint:
    """The entries of ``changeset``, whose resource changes are ``shown`` (secrets hashed)."""
    handles = {change.ksuid: change.handle for change in shown}
    entries: Fingerprint = {}
    for key, (operation, documents) in _resource_entries(shown).items():
        entries[key] = f"{operation}:{_digest(documents, handles)}"
    for target in changeset.targets:
        entries[f"target {target.label}"] = f"{target.operation}:{_digest(target.to_json(), handles)}"
    for stack in changeset.stacks:
        entries[f"stack {stack.label}"] = f"{stack.operation}:{_digest(stack.to_json(), handles)}"
    created: dict[str, int] = {}
    for policy in changeset.policies:
        document = policy.to_json()
        if policy.operation == "create":  # an unnamed inline policy's label is minted: count them instead
            document.pop("label")
            place = f"{policy.stack or ''}/{policy.policy_type}"
            created[place] = created.get(place, 0) + 1
            key = f"policy {place} new #{created[place]}"
        else:
            key = f"policy {policy.stack or ''}/{policy.policy_type}/{policy.label}"
        entries[key] = f"{policy.operation}:{_digest(document, handles)}"
    for stack in changeset.absorbed:
        entries[f"baseline {stack}"] = "record:-"
    return entries


def _resource_entries(shown: Sequence[ResourceChange]) -> dict[str, tuple[str, list[Any]]]:
    """Per resource handle, its operation (the two halves of a replace are one ``replace``) and its changes."""
    grouped: dict[str, tuple[str, list[Any]]] = {}
    for change in shown:
        key = f"resource {change.handle}"
        document = {name: value for name, value in change.to_json().items() if name not in _MINTED}
        operation, documents = grouped.get(key, ("", []))
        documents.append(document)
        grouped[key] = ("replace" if change.group_id else change.operation, documents)
    return grouped


def _digest(document: Any, handles: Mapping[str, str]) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    # A reference names its producer by ksuid, minted afresh when the producer is new: by its handle instead.
    text = _REF.sub(lambda found: f"svc://{handles.get(found.group(1), found.group(1))}#", text)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def moved(expected: Mapping[str, str], actual: Mapping[str, str]) -> list[dict[str, str]]:
    """What differs between the fingerprint a submission expected and the one it plans now: per entry, the
    operation planned then (``Planned``, absent when it was not planned) and now (``Now``, absent when it is not
    planned any more); ``Planned == Now`` when the change itself differs (another start or end state)."""
    out = []
    for key in sorted(set(expected) | set(actual)):
        then, now = expected.get(key), actual.get(key)
        if then == now:
            continue
        entry = {"Change": key}
        if then is not None:
            entry["Planned"] = then.partition(":")[0]
        if now is not None:
            entry["Now"] = now.partition(":")[0]
        out.append(entry)
    return out
