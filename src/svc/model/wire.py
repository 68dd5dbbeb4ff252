"""The API's JSON shapes (reference wire format: PascalCase, exact field names).

The command service produces these objects and the HTTP layer serialises them unchanged, so that
existing clients of the reference API keep working. Optional fields are omitted when ``None``
(serialise with ``model_dump(by_alias=True, exclude_none=True)``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CommandState = Literal["NotStarted", "Pending", "InProgress", "Canceling", "Success", "Failed", "Canceled"]
UpdateState = Literal["Unknown", "NotStarted", "Pending", "InProgress", "Failed", "Success", "Canceled", "Rejected"]
ResourceOperation = Literal["create", "update", "delete", "read", "replace"]


class Wire(BaseModel):
    # defer_build: a shape's validator is built when first used, not at import. The CLI imports every shape and
    # uses two or three per command; building them all took ~8% of its start-up CPU (``import svc.cli.main``).
    model_config = ConfigDict(populate_by_name=True, extra="forbid", defer_build=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ResourceUpdateView(Wire):
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
    Duration: int | None = Field(default=None, description="milliseconds")
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


class TargetUpdateView(Wire):
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


class StackUpdateView(Wire):
    StackLabel: str
    Operation: Literal["create", "update", "delete"]
    State: UpdateState
    Duration: int | None = None
    ErrorMessage: str | None = None
    Description: str = ""
    StartTs: datetime | None = None
    ModifiedTs: datetime | None = None


class PolicyUpdateView(Wire):
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


class CommandView(Wire):
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


class DescriptionView(Wire):
    Text: str | None = None
    Confirm: bool | None = None


class SimulationView(Wire):
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


class SubmitCommandResponse(Wire):
    CommandId: str
    Description: DescriptionView = Field(default_factory=lambda: DescriptionView())
    Simulation: SimulationView
    # Added: with ``seal-secrets=true``, the simulated forma with each secret sealed under the agent's key
    # (``{"$sealed": token}``), to save with the plan (``svc plan -o``) and submit again to apply it.
    SealedForma: dict[str, Any] | None = None


class ListCommandStatusResponse(Wire):
    Commands: list[CommandView]


class CanceledUpdateState(Wire):
    State: UpdateState  # Canceled; InProgress: in a plugin call, it finishes first (a cancel without force)
    ForceCanceled: bool | None = None
    CommandId: str | None = None
    # Not in the reference: which resource, so that a client can name what was stopped or abandoned.
    ResourceType: str | None = None
    ResourceLabel: str | None = None
    StackName: str | None = None


class CancelCommandResponse(Wire):
    CommandIds: list[str]
    ResourceUpdateStates: dict[str, CanceledUpdateState] | None = None
    Forced: bool | None = None


class ResourceSummary(Wire):
    Label: str
    Stack: str
    Type: str
    NativeID: str | None = None
    Ksuid: str | None = None
    # Not in the reference's summary; inventory tables show them without fetching whole resources.
    Target: str | None = None
    Managed: bool | None = None


class StackView(Wire):
    ID: str | None = None
    Label: str
    Description: str | None = None
    Policies: list[dict[str, Any]] | None = None
    CreatedAt: datetime | None = None


class PolicyView(Wire):
    """``GET /policies``: a standalone policy (declared on its own, shared by label) and the stacks using it."""

    Label: str
    Type: Literal["ttl", "auto-reconcile"]
    Config: dict[str, Any]  # the policy document, as in a stack's ``Policies``
    AttachedStacks: list[str] | None = None


class DriftChange(Wire):
    """One property changed by drift: its JSON pointer, and its value before (absent when it was added) and now
    (absent when it was removed), as the provider has them (secrets as their hash envelopes)."""

    Path: str
    Old: Any = None
    New: Any = None


class DriftedResource(Wire):
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


class StackDriftView(Wire):
    """``GET /stacks/{stack}/drift``; also each stack's entry in a ``ReconcileRejected`` refusal's data."""

    ModifiedResources: list[DriftedResource]


class ReconcileRejectedData(Wire):
    """The ``data`` of a ``ReconcileRejected`` refusal: the drifted resources by stack."""

    ModifiedStacks: dict[str, StackDriftView]


class ChangedResource(Wire):
    """A resource whose stored state a synchronization pass changed (``update``, ``delete``, or ``evict`` for a
    discovered one a discovery filter now excludes)."""

    Stack: str
    Type: str
    Label: str
    Operation: str


class SyncReportView(Wire):
    """``POST /admin/synchronize``: the pass's command (None: nothing changed) and what it changed."""

    CommandId: str | None = None
    Changed: list[ChangedResource] = Field(default_factory=list)


class DiscoveredResource(Wire):
    Stack: str
    Type: str
    Label: str
    Target: str
    NativeID: str | None = None


class DiscoveryReportView(Wire):
    """``POST /admin/discover``: what the run did, and the resources it stored that are new."""

    CommandId: str | None = None
    Targets: int = 0
    Listed: int = 0
    Discovered: int = 0
    Filtered: int = 0
    Denied: list[str] = Field(default_factory=list)
    Errors: list[str] = Field(default_factory=list)
    Resources: list[DiscoveredResource] = Field(default_factory=list)


class TtlSweepView(Wire):
    """``POST /admin/check-ttl`` (snake_case, as the reference answers it): the stacks the sweep expired and the
    destroy commands it started."""

    expired_stacks: list[str] = Field(default_factory=list)
    command_ids: list[str] = Field(default_factory=list)


class ReconcileStackResponse(Wire):
    """``POST /stacks/{stack}/reconcile``: 202 with the command's id, or 200 with a message when nothing drifted."""

    command_id: str | None = None
    message: str | None = None


class TargetView(Wire):
    Label: str
    Namespace: str
    Config: dict[str, Any] | None = None
    ConfigSchema: dict[str, Any] | None = None
    Discoverable: bool = False
    Version: int | None = None
    Reaping: dict[str, Any] | None = None  # {Kind: never} | {Kind: after, MaxUnreachableSeconds}


class ErrorBody(Wire):
    """A typed domain error: ``{"error": Type, "data": {…}}``."""

    error: str
    data: dict[str, Any] = Field(default_factory=dict)


class MessageBody(Wire):
    """A plain error: ``{"message": "…"}``."""

    message: str


class RetryConfigView(Wire):
    """Durations in nanoseconds, as the reference serialises Go durations."""

    StatusCheckInterval: int
    MaxRetries: int
    RetryDelay: int


class PluginInfo(Wire):
    Namespace: str
    Version: str
    NodeName: str | None = None
    MaxRequestsPerSecond: int = 0
    ResourceCount: int = 0
    ResourceTypesToDiscover: list[str] | None = None
    RetryConfig: RetryConfigView | None = None
    LabelConfig: dict[str, Any] | None = None
    DiscoveryFilters: list[dict[str, Any]] | None = None


class StatsView(Wire):
    """``GET /stats``: the agent's version (the CLI's strict version check reads it) and counts."""

    Version: str
    AgentId: str
    Clients: int = 0
    Commands: dict[str, int] = Field(default_factory=dict)
    States: dict[str, int] = Field(default_factory=dict)
    Stacks: int = 0
    Resources: dict[str, int] = Field(default_factory=dict)
    UnmanagedResources: dict[str, int] = Field(default_factory=dict)
    Targets: dict[str, int] = Field(default_factory=dict)
    ResourceTypes: dict[str, int] = Field(default_factory=dict)
    Plugins: list[PluginInfo] = Field(default_factory=list)
    ReapPendingTargets: int = 0  # unreachable targets a reap policy applies to
    ReapedTargets: int = 0
    Role: str | None = None  # leader or follower (svc's own: several agents may share a datastore)
    Leader: str | None = None  # the leading agent's id, as this agent last saw it
