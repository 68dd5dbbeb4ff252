"""The API's JSON shapes (reference wire format: PascalCase, exact field names).

The command service produces these objects and the HTTP layer serialises them unchanged, so that
existing clients of the reference API keep working. Optional fields are omitted when ``None``
(``to_json``).

They are ``msgspec`` structs rather than pydantic models because the CLI decodes them on every command:
importing pydantic and defining svc's models took ~0.1 s of a short command's ~0.25 s of CPU, while a
struct costs nothing to define and ``decode`` validates an answer in C. The agent builds them from its
own records (the type checker checks those calls); the CLI reads them leniently (``decode``), so that a
newer agent's extra fields are dropped.
"""

from __future__ import annotations

import functools
import types
import typing
from datetime import datetime
from typing import Any, Literal, TypeVar

import msgspec

CommandState = Literal["NotStarted", "Pending", "InProgress", "Canceling", "Success", "Failed", "Canceled"]
UpdateState = Literal["Unknown", "NotStarted", "Pending", "InProgress", "Failed", "Success", "Canceled", "Rejected"]
ResourceOperation = Literal["create", "update", "delete", "read", "replace"]


class Wire(msgspec.Struct):
    # Every subclass says kw_only=True again (msgspec applies it to the fields a class defines): the fields keep
    # the reference's order, optional ones among required.

    def to_json(self, *, nulls: bool = False) -> dict[str, Any]:
        """The JSON document: every field that is not ``None`` (``nulls``: every field), by name, nested shapes
        likewise (a ``None`` inside a free-form document such as ``Properties`` stays)."""
        document: dict[str, Any] = msgspec.to_builtins(self)  # in C; UTC timestamps end in "Z", as Go's
        return document if nulls else _without_nulls(document, type(self))


Shape = TypeVar("Shape", bound=Wire)


class WireError(ValueError):
    """A document that is not the shape asked for; ``where`` is its path (``Simulation.Command.State``)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


def decode(shape: type[Shape] | Any, document: Any) -> Any:
    """``document`` (JSON text, or what ``json.loads`` made of it) as ``shape`` (a wire shape, or a type made of
    them such as ``list[CommandView]``): fields this shape does not have are dropped; a missing or mistyped one
    is a ``WireError``."""
    try:
        if isinstance(document, bytes | str):
            return msgspec.json.decode(document, type=shape)
        return msgspec.convert(document, type=shape)
    except msgspec.ValidationError as exc:
        raise _wire_error(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise WireError("the answer", f"not JSON ({exc})") from None


_MISSING = "Object missing required field `"


def _wire_error(text: str) -> WireError:
    # msgspec says "Expected `str`, got `int` - at `$.Simulation.Command[0].State`"
    message, _, where = text.rpartition(" - at `")
    if not message:
        message, where = text, ""
    where = where.rstrip("`").removeprefix("$").removeprefix(".")
    if message.startswith(_MISSING):
        field = message.removeprefix(_MISSING).removesuffix("`")
        where, message = f"{where}.{field}" if where else field, "missing"
    return WireError(where or "the answer", message)


def _without_nulls(document: dict[str, Any], shape: type[Wire]) -> dict[str, Any]:
    kept = {key: value for key, value in document.items() if value is not None}
    for key, inner, container in _nested_shapes(shape):
        value = kept.get(key)
        if value is None:
            continue
        if container is list:
            kept[key] = [_without_nulls(item, inner) for item in value]
        elif container is dict:
            kept[key] = {name: _without_nulls(item, inner) for name, item in value.items()}
        else:
            kept[key] = _without_nulls(value, inner)
    return kept


@functools.cache
def _nested_shapes(shape: type[Wire]) -> tuple[tuple[str, type[Wire], type | None], ...]:
    """The fields of ``shape`` that hold wire shapes: (JSON key, the shape, ``list``/``dict``/``None`` for one)."""
    nested = []
    hints = typing.get_type_hints(shape)
    for name, key in zip(shape.__struct_fields__, shape.__struct_encode_fields__, strict=True):
        hint = hints[name]
        if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None
            hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
        container, args = typing.get_origin(hint), typing.get_args(hint)
        inner = args[-1] if container in (list, dict) else hint
        if isinstance(inner, type) and issubclass(inner, Wire):
            nested.append((key, inner, container if container in (list, dict) else None))
    return tuple(nested)


class ResourceUpdateView(Wire, kw_only=True):
    ResourceId: str
    ResourceType: str
    ResourceLabel: str | None = None
    OldLabel: str | None = None
    StackName: str | None = None
    OldStackName: str | None = None
    Operation: ResourceOperation
    PatchDocument: list[dict[str, Any]] | None = None
    CreateOnlyPatch: list[dict[str, Any]] | None = None
    State: UpdateState
    StartedAt: datetime | None = None
    Duration: int | None = None  # milliseconds
    CurrentAttempt: int | None = None
    MaxAttempts: int | None = None
    ErrorMessage: str | None = None
    StateMessage: str | None = None
    Properties: dict[str, Any] | None = None
    OldProperties: dict[str, Any] | None = None
    GroupId: str | None = None
    ReferenceLabels: dict[str, str] | None = None
    NativeId: str | None = None
    IsCascade: bool | None = None
    CascadeSource: str | None = None


class TargetUpdateView(Wire, kw_only=True):
    TargetLabel: str
    Operation: Literal["create", "update", "delete", "replace", "resolve"]
    State: UpdateState
    Duration: int | None = None
    ErrorMessage: str | None = None
    Discoverable: bool = False
    ExistingConfig: dict[str, Any] | None = None
    DesiredConfig: dict[str, Any] | None = None
    StartTs: datetime | None = None
    ModifiedTs: datetime | None = None
    IsCascade: bool | None = None
    CascadeSource: str | None = None


class StackUpdateView(Wire, kw_only=True):
    StackLabel: str
    Operation: Literal["create", "update", "delete"]
    State: UpdateState
    Duration: int | None = None
    ErrorMessage: str | None = None
    Description: str = ""
    StartTs: datetime | None = None
    ModifiedTs: datetime | None = None


class PolicyUpdateView(Wire, kw_only=True):
    PolicyLabel: str
    PolicyType: Literal["ttl", "auto-reconcile"]
    StackLabel: str | None = None
    Operation: Literal["create", "update", "delete", "attach", "detach", "skip"]
    State: UpdateState
    Duration: int | None = None
    ErrorMessage: str | None = None
    PolicyConfig: dict[str, Any] | None = None
    OldPolicyConfig: dict[str, Any] | None = None
    ReferencingStacks: list[str] | None = None
    StartTs: datetime | None = None
    ModifiedTs: datetime | None = None


class CommandView(Wire, kw_only=True):
    CommandId: str
    Command: Literal["apply", "destroy", "sync", "discovery"]
    Mode: Literal["reconcile", "patch"] | None = None
    Source: str | None = None
    Subject: str | None = None
    SubjectName: str | None = None
    State: CommandState
    StartTs: datetime | None = None
    EndTs: datetime | None = None
    ResourceUpdates: list[ResourceUpdateView] | None = None
    TargetUpdates: list[TargetUpdateView] | None = None
    StackUpdates: list[StackUpdateView] | None = None
    PolicyUpdates: list[PolicyUpdateView] | None = None
    # Added (not in the reference): in a summary answer of a command that has ended, how many of all its resource
    # updates are in each state, whichever ``ResourceUpdates`` lists (with ``updated_since``, only those written
    # since): a follower's last poll reads its counts instead of every update again.
    UpdateCounts: dict[str, int] | None = None


class DescriptionView(Wire, kw_only=True):
    Text: str | None = None
    Confirm: bool | None = None


class SimulationView(Wire, kw_only=True):
    ChangesRequired: bool
    Command: CommandView | None = None
    Warnings: list[str] | None = None
    # Added (not in the reference): the stacks whose drift a reconcile that changes no resource takes in. The
    # submission records it as their new baseline, so it asks for consent like a change.
    BaselineStacks: list[str] | None = None
    # Added: a simulation's fingerprint of its plan (per change, ``operation:digest``). Sent back as the
    # ``expected-plan`` form field, the submission goes ahead only if the agent still plans exactly this
    # (``PlanChanged`` otherwise): how ``svc apply`` applies the plan it showed, or a saved one.
    Fingerprint: dict[str, str] | None = None


class SubmitCommandResponse(Wire, kw_only=True):
    CommandId: str
    Description: DescriptionView = msgspec.field(default_factory=lambda: DescriptionView())
    Simulation: SimulationView
    # Added: with ``seal-secrets=true``, the simulated forma with each secret sealed under the agent's key
    # (``{"$sealed": token}``), to save with the plan (``svc plan -o``) and submit again to apply it.
    SealedForma: dict[str, Any] | None = None


class ListCommandStatusResponse(Wire, kw_only=True):
    Commands: list[CommandView]


class CanceledUpdateState(Wire, kw_only=True):
    State: UpdateState  # Canceled; InProgress: in a plugin call, it finishes first (a cancel without force)
    ForceCanceled: bool | None = None
    CommandId: str | None = None
    # Not in the reference: which resource, so that a client can name what was stopped or abandoned.
    ResourceType: str | None = None
    ResourceLabel: str | None = None
    StackName: str | None = None


class CancelCommandResponse(Wire, kw_only=True):
    CommandIds: list[str]
    ResourceUpdateStates: dict[str, CanceledUpdateState] | None = None
    Forced: bool | None = None


class ResourceSummary(Wire, kw_only=True):
    Label: str
    Stack: str
    Type: str
    NativeID: str | None = None
    Ksuid: str | None = None
    # Not in the reference's summary; inventory tables show them without fetching whole resources.
    Target: str | None = None
    Managed: bool | None = None


class StackView(Wire, kw_only=True):
    ID: str | None = None
    Label: str
    Description: str | None = None
    Policies: list[dict[str, Any]] | None = None
    CreatedAt: datetime | None = None


class PolicyView(Wire, kw_only=True):
    """``GET /policies``: a standalone policy (declared on its own, shared by label) and the stacks using it."""

    Label: str
    Type: Literal["ttl", "auto-reconcile"]
    Config: dict[str, Any]  # the policy document, as in a stack's ``Policies``
    AttachedStacks: list[str] | None = None


class DriftChange(Wire, kw_only=True):
    """One property changed by drift: its JSON pointer, and its value before (absent when it was added) and now
    (absent when it was removed), as the provider has them (secrets as their hash envelopes)."""

    Path: str
    Old: Any = msgspec.UNSET  # absent (UNSET), not null, when the property was added
    New: Any = msgspec.UNSET  # absent when it was removed


class DriftedResource(Wire, kw_only=True):
    """A resource changed since its stack's last reconcile (drift). ``GET /stacks/{stack}/drift`` adds, for an
    update, its properties now and as the reconcile left them, and the RFC 6902 patch between them; a refused
    reconcile (``ReconcileRejected``) names it only."""

    Stack: str
    Type: str
    Label: str
    Operation: str  # update | delete
    Properties: dict[str, Any] | None = None
    OldProperties: dict[str, Any] | None = None
    PatchDocument: list[dict[str, Any]] | None = None
    Changes: list[DriftChange] | None = None


class StackDriftView(Wire, kw_only=True):
    """``GET /stacks/{stack}/drift``; also each stack's entry in a ``ReconcileRejected`` refusal's data."""

    ModifiedResources: list[DriftedResource]


class ReconcileRejectedData(Wire, kw_only=True):
    """The ``data`` of a ``ReconcileRejected`` refusal: the drifted resources by stack."""

    ModifiedStacks: dict[str, StackDriftView]


class EveryStackDriftView(Wire, kw_only=True):
    """``GET /drift``: the drifted resources by stack, of the stacks that drifted, and how many stacks were
    looked at."""

    ModifiedStacks: dict[str, StackDriftView]
    Stacks: int


class ChangedResource(Wire, kw_only=True):
    """A resource whose stored state a synchronization pass changed (``update``, ``delete``, or ``evict`` for a
    discovered one a discovery filter now excludes)."""

    Stack: str
    Type: str
    Label: str
    Operation: str


class SyncReportView(Wire, kw_only=True):
    """``POST /admin/synchronize``: the pass's command (None: nothing changed) and what it changed."""

    CommandId: str | None = None
    Changed: list[ChangedResource] = msgspec.field(default_factory=list)


class DiscoveredResource(Wire, kw_only=True):
    Stack: str
    Type: str
    Label: str
    Target: str
    NativeID: str | None = None


class DiscoveryReportView(Wire, kw_only=True):
    """``POST /admin/discover``: what the run did, and the resources it stored that are new."""

    CommandId: str | None = None
    Targets: int = 0
    Listed: int = 0
    Discovered: int = 0
    Filtered: int = 0
    Denied: list[str] = msgspec.field(default_factory=list)
    Errors: list[str] = msgspec.field(default_factory=list)
    Resources: list[DiscoveredResource] = msgspec.field(default_factory=list)


class TtlSweepView(Wire, kw_only=True):
    """``POST /admin/check-ttl`` (snake_case, as the reference answers it): the stacks the sweep expired and the
    destroy commands it started."""

    expired_stacks: list[str] = msgspec.field(default_factory=list)
    command_ids: list[str] = msgspec.field(default_factory=list)


class ReconcileStackResponse(Wire, kw_only=True):
    """``POST /stacks/{stack}/reconcile``: 202 with the command's id, or 200 with a message when nothing drifted."""

    command_id: str | None = None
    message: str | None = None


class TargetView(Wire, kw_only=True):
    Label: str
    Namespace: str
    Config: dict[str, Any] | None = None
    ConfigSchema: dict[str, Any] | None = None
    Discoverable: bool = False
    Version: int | None = None
    Reaping: dict[str, Any] | None = None  # {Kind: never} | {Kind: after, MaxUnreachableSeconds}


class ErrorBody(Wire, kw_only=True):
    """A typed domain error: ``{"error": Type, "data": {…}}``."""

    error: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class MessageBody(Wire, kw_only=True):
    """A plain error: ``{"message": "…"}``."""

    message: str


class RetryConfigView(Wire, kw_only=True):
    """Durations in nanoseconds, as the reference serialises Go durations."""

    StatusCheckInterval: int
    MaxRetries: int
    RetryDelay: int


class PluginInfo(Wire, kw_only=True):
    Namespace: str
    Version: str
    NodeName: str | None = None
    MaxRequestsPerSecond: int = 0
    ResourceCount: int = 0
    ResourceTypesToDiscover: list[str] | None = None
    RetryConfig: RetryConfigView | None = None
    LabelConfig: dict[str, Any] | None = None
    DiscoveryFilters: list[dict[str, Any]] | None = None


class StatsView(Wire, kw_only=True):
    """``GET /stats``: the agent's version (the CLI's strict version check reads it) and counts."""

    Version: str
    AgentId: str
    Clients: int = 0
    Commands: dict[str, int] = msgspec.field(default_factory=dict)
    States: dict[str, int] = msgspec.field(default_factory=dict)
    Stacks: int = 0
    Resources: dict[str, int] = msgspec.field(default_factory=dict)
    UnmanagedResources: dict[str, int] = msgspec.field(default_factory=dict)
    Targets: dict[str, int] = msgspec.field(default_factory=dict)
    ResourceTypes: dict[str, int] = msgspec.field(default_factory=dict)
    Plugins: list[PluginInfo] = msgspec.field(default_factory=list)
    ReapPendingTargets: int = 0  # unreachable targets a reap policy applies to
    ReapedTargets: int = 0
    Role: str | None = None  # leader or follower (svc's own: several agents may share a datastore)
    Leader: str | None = None  # the leading agent's id, as this agent last saw it
