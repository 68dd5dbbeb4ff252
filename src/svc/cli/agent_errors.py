"""The agent's error answers as one line that says what to do.

Typed bodies (``{"error": Type, "data": {…}}``) get a message per type; plain ones (``{"message": …}``)
are shown as the agent wrote them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from svc.cli.errors import CliError
from svc.cli.http import Response

_MAX_LISTED = 10


def _listed(items: Iterable[str]) -> str:
    items = list(items)
    shown = ", ".join(items[:_MAX_LISTED])
    return shown + (f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else "")


def _resource_name(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    name = "/".join(str(item[key]) for key in ("Stack", "Type", "Label") if item.get(key))
    operation = item.get("Operation")
    return f"{name} ({operation})" if operation else name


def _reconcile_rejected(data: dict[str, Any]) -> str:
    modified = []
    for stack, details in (data.get("ModifiedStacks") or {}).items():
        for item in (details or {}).get("ModifiedResources") or []:
            modified.append(_resource_name({"Stack": stack, **item} if isinstance(item, dict) else item))
    which = f": {_listed(modified)}" if modified else ""
    return (f"reconcile refused: resources were changed outside this forma since the last reconcile{which}; "
            "put those changes into the forma (see svc inventory resources), or overwrite them with --force")


def _conflicting(data: dict[str, Any]) -> str:
    ids = [str(c.get("CommandId")) for c in data.get("ConflictingCommands") or [] if isinstance(c, dict)]
    first = ids[0] if ids else "<id>"
    return (f"another command is still running on these stacks ({_listed(ids) or 'unknown'}); wait for it "
            f"(svc command status {first}) or cancel it (svc cancel --query id:{first}), then try again")


def _patch_rejected(data: dict[str, Any]) -> str:
    stacks = [s.get("Label", str(s)) if isinstance(s, dict) else str(s) for s in data.get("UnknownStacks") or []]
    return (f"patch refused: stack(s) {_listed(stacks)} do not exist yet; create them first with "
            "svc apply --mode reconcile")


def _empty_stacks(data: dict[str, Any]) -> str:
    return (f"stack(s) {_listed(map(str, data.get('EmptyStacks') or []))} would have no resources; add resources "
            "to them or leave them out of the forma")


def _required_missing(data: dict[str, Any]) -> str:
    return (f"{data.get('Stack')}/{data.get('Type')}/{data.get('Label')} cannot be created without "
            f"{_listed(map(str, data.get('MissingFields') or []))}; set them in the forma")


def _referenced_missing(data: dict[str, Any]) -> str:
    missing = [_resource_name(item) for item in data.get("MissingResources") or []]
    return (f"the forma references resources that neither it nor the agent has: {_listed(missing)}; "
            "declare them in the forma or fix the references")


def _dependent(item: Any) -> str:
    """``stack/Type/label (on a)``: which resource (or target) depends, and on what."""
    if not isinstance(item, dict):
        return str(item)
    name = "/".join(str(item[key]) for key in ("Stack", "ResourceType", "ResourceLabel") if item.get(key))
    name = name or str(item.get("TargetLabel") or item)
    return f"{name} (on {item['CascadeSource']})" if item.get("CascadeSource") else name


def _dependents(kind: str) -> Callable[[dict[str, Any]], str]:
    def message(data: dict[str, Any]) -> str:
        names = [_dependent(d) for d in data.get("Dependents") or []]
        return (f"destroy refused: other {kind} depend on what it would delete ({_listed(names)}); destroy them "
                "too with --on-dependents cascade, or destroy less")
    return message


def _target_exists(data: dict[str, Any]) -> str:
    label = data.get("TargetLabel")
    if data.get("MismatchType") == "namespace":
        return (f"target {label} already exists with namespace {data.get('ExistingNamespace')}, not "
                f"{data.get('FormaNamespace')}; use another label for the new target")
    return (f"target {label} already exists with another configuration that cannot change in place; use another "
            "label, or move the resources off it first")


def _non_portable(data: dict[str, Any]) -> str:
    return (f"target {data.get('TargetLabel')} would be replaced, but these resources cannot move to a new "
            f"target: {_listed(map(str, data.get('Resources') or []))}; destroy them first or keep the target")


def _invalid_query(data: dict[str, Any]) -> str:
    return f"invalid query: {data.get('Reason')}"


def _stack_ref(data: dict[str, Any]) -> str:
    return f"stack {data.get('StackLabel')} is referenced but declared nowhere; declare it in the forma"


def _target_ref(data: dict[str, Any]) -> str:
    return f"target {data.get('TargetLabel')} is referenced but declared nowhere; declare it in the forma"


def _policy_required(data: dict[str, Any]) -> str:
    return (f"stack {data.get('StackLabel')} has no auto-reconcile policy (or does not exist); add "
            "policies { new svc.AutoReconcilePolicy { … } } to its svc.Stack, or revert its drift with "
            "svc apply --mode reconcile --force FILE")


def moved_listing(data: dict[str, Any]) -> str:
    """What a ``PlanChanged`` refusal says moved: ``resource app/T/a (planned update, now replace), …``."""
    entries = []
    for item in data.get("Moved") or []:
        if not isinstance(item, dict):
            continue
        then, now = item.get("Planned"), item.get("Now")
        if then and now:
            how = f"planned {then}, now {now}" if then != now else f"planned {then}, now from or to another state"
        else:
            how = f"planned {then}, now no change" if then else f"not planned, now {now}"
        entries.append(f"{item.get('Change')} ({how})")
    return _listed(entries) or "the agent did not say what"


def _plan_changed(data: dict[str, Any]) -> str:
    return (f"the inventory changed since this plan was made, so the agent plans otherwise now: "
            f"{moved_listing(data)}; nothing was changed: make the plan again (svc plan -o FILE FORMA)")


_TYPED: dict[str, Callable[[dict[str, Any]], str]] = {
    "PlanChanged": _plan_changed,
    "ReconcilePolicyRequired": _policy_required,
    "ReconcileRejected": _reconcile_rejected,
    "ConflictingCommands": _conflicting,
    "PatchRejected": _patch_rejected,
    "EmptyStackRejected": _empty_stacks,
    "RequiredFieldMissingOnCreate": _required_missing,
    "ReferencedResourcesNotFound": _referenced_missing,
    "ResourceHasDependents": _dependents("resources"),
    "TargetHasDependents": _dependents("targets"),
    "TargetAlreadyExists": _target_exists,
    "NonPortableResources": _non_portable,
    "InvalidQueryError": _invalid_query,
    "StackReferenceNotFound": _stack_ref,
    "TargetReferenceNotFound": _target_ref,
}


def describe(response: Response, action: str) -> str:
    """A one-line message for an error answer to ``action`` (e.g. "apply")."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        kind, data, message = body.get("error"), body.get("data"), body.get("message")
        if isinstance(kind, str) and isinstance(data, dict):
            render = _TYPED.get(kind)
            # Our engine's message names the problem precisely; the typed rendering adds what to do.
            text = render(data) if render is not None else (message or kind)
            return f"{action} refused by the agent ({kind}): {text}"
        text = message if isinstance(message, str) else kind if isinstance(kind, str) else None
        if text:
            return f"{action}: the agent answered {response.status_code}: {text}"
    snippet = response.text.strip().replace("\n", " ")[:200]
    return f"{action}: the agent answered {response.status_code}" + (f": {snippet}" if snippet else "")


class AgentRefused(CliError):
    """A typed refusal (``{"error": Type, "data": {…}}``): the one-line message, and the body for callers that
    show more (apply shows the drift behind a ReconcileRejected)."""

    def __init__(self, message: str, kind: str, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.kind = kind
        self.data = data


class AgentUnavailable(CliError):
    """503: the agent cannot serve this now (its datastore is unavailable); the same request may succeed later,
    and the agent's commands go on meanwhile."""


def raise_for(response: Response, action: str) -> None:
    if response.is_error:
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("error"), str) and isinstance(body.get("data"), dict):
            raise AgentRefused(describe(response, action), body["error"], body["data"])
        raise (AgentUnavailable if response.status_code == 503 else CliError)(describe(response, action))
