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

import orjson

from svc.engine.planner.changeset import Changeset, ResourceChange

Fingerprint = dict[str, str]
_REF = re.compile(rb"svc://([0-9A-Za-z]+)#")
# Dates and dataclasses go to ``default`` as ``json`` sends them, not written orjson's way.
_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_NOT_ASCII = re.compile(rb"[\x7f-\xff]+")  # DEL, and whole UTF-8 sequences (their bytes are all >= 0x80)
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
        document = change.to_json()  # a new dict each time
        for name in _MINTED:
            del document[name]
        operation, documents = grouped.get(key, ("", []))
        documents.append(document)
        grouped[key] = ("replace" if change.group_id else change.operation, documents)
    return grouped


def _digest(document: Any, handles: Mapping[str, str]) -> str:
    text = _canonical(document)
    if b"svc://" in text:
        # A reference names its producer by ksuid, minted afresh when the producer is new: by its handle instead.
        text = _REF.sub(lambda found: b"svc://%s#" % _handle(found.group(1), handles), text)
    return hashlib.sha256(text).hexdigest()[:32]


def _handle(ksuid: bytes, handles: Mapping[str, str]) -> bytes:
    text = ksuid.decode()
    return handles.get(text, text).encode()


def _canonical(document: Any) -> bytes:
    """The document as ``json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)`` writes it, the
    text fingerprints were first made of (so a plan saved before still matches, but for a float orjson writes
    otherwise, as ``0.00001`` for ``1e-05``), several times faster: orjson, its UTF-8 escaped as ``json`` escapes
    what is not ASCII. Fingerprinting a simulation's 10,000 changes with ``json`` took a quarter of it."""
    try:
        text = orjson.dumps(document, default=str, option=_OPTIONS)
    except orjson.JSONEncodeError:  # e.g. an integer beyond 64 bits, which only ``json`` writes
        return json.dumps(document, sort_keys=True, separators=(",", ":"), default=str).encode()
    return text if text.isascii() and b"\x7f" not in text else _NOT_ASCII.sub(_escaped, text)


def _escaped(found: re.Match[bytes]) -> bytes:
    return json.dumps(found.group().decode())[1:-1].encode()


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
