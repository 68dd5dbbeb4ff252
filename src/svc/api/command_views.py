"""Commands as the API shows them (``svc.model.wire``): what the command service returns (stored records,
a plan's changeset, a cancel's outcome) rendered as the reference's wire shapes, secrets hashed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from svc.engine.command_records import UpdateData, shown_change, stored_change
from svc.engine.errors import ConflictingCommands
from svc.engine.planner.changeset import Changeset, PolicyChange, ResourceChange
from svc.engine.service import Caller, CancelOutcome, StoredCommand, Submission
from svc.model import wire
from svc.model.records import CommandRecord, ResourceUpdateRecord
from svc.model.states import UpdateState

Json = dict[str, Any]


def change_view(change: ResourceChange, state: str, **extra: Any) -> wire.ResourceUpdateView:
    """The view of a change whose secrets are hashed already (``command_records.shown_change``, or as stored)."""
    desired = change.desired
    return wire.ResourceUpdateView(
        ResourceId=change.ksuid, ResourceType=change.type, ResourceLabel=change.label, OldLabel=change.old_label,
        StackName=change.stack, OldStackName=change.old_stack, Operation=change.operation,
        PatchDocument=change.patch, CreateOnlyPatch=change.create_only_patch, State=state,  # type: ignore[arg-type]
        Properties=desired if change.operation != "delete" else None,
        OldProperties=change.prior if change.operation != "create" else None,
        GroupId=change.group_id, NativeId=change.native_id, IsCascade=change.is_cascade or None,
        CascadeSource=change.cascade_source, StateMessage=change.reason or None, **extra)


def update_view(record: ResourceUpdateRecord) -> wire.ResourceUpdateView:
    change = stored_change(record)
    view = change_view(change, record.state, StartedAt=record.start_ts)
    return _with_progress(view, record, change.native_id)


def _with_progress(view: wire.ResourceUpdateView, record: ResourceUpdateRecord,
                   native_id: str | None = None) -> wire.ResourceUpdateView:
    """``view`` with what ``record``'s data says of its progress: attempts, duration, message, native id."""
    data = UpdateData.from_json(dict(record.data))
    failed = record.state in (UpdateState.FAILED, UpdateState.REJECTED)
    if record.start_ts is not None and data.finished_at:
        view.Duration = int((datetime.fromisoformat(data.finished_at) - record.start_ts).total_seconds() * 1000)
    view.CurrentAttempt, view.MaxAttempts = data.current_attempt, data.max_attempts
    view.NativeId = native_id or (data.attempt or {}).get("native_id") or None
    if data.message:
        if failed:
            view.ErrorMessage = data.message
        else:
            view.StateMessage = data.message
    return view


def command_view(command: CommandRecord, updates: Iterable[ResourceUpdateRecord]) -> wire.CommandView:
    data = dict(command.data)
    return wire.CommandView(
        CommandId=command.id, Command=command.command, Mode=command.mode, Source=command.source,  # type: ignore
        Subject=command.subject, SubjectName=command.subject_name, State=command.state,  # type: ignore[arg-type]
        StartTs=command.start_ts, EndTs=command.end_ts,
        ResourceUpdates=[update_view(u) for u in sorted(updates, key=lambda u: (u.stack_label, u.resource_type,
                                                                                 u.resource_label, u.operation))],
        TargetUpdates=[_target_view(t, "Success") for t in data.get("targets", [])] or None,
        StackUpdates=[wire.StackUpdateView(StackLabel=s["label"], Operation=s["operation"], State="Success",
                                           Description=s.get("description", "")) for s in data.get("stacks", [])]
        or None,
        PolicyUpdates=[_policy_view(PolicyChange.from_json(p), "Success") for p in data.get("policies", [])] or None)


def summary_view(command: CommandRecord, updates: Iterable[ResourceUpdateRecord], *,
                 progress: bool = False) -> wire.CommandView:
    """``command_view`` with each resource update reduced to what following a command needs (which
    resource, its operation and state, the error of a failure; ``progress``: and its progress), from records read
    without their changes (``get_resource_update_summaries``): a poll of a 10,000-update command cost a second of
    the agent's CPU."""
    view = command_view(command, ())
    render = update_progress if progress else update_summary
    view.ResourceUpdates = [render(u) for u in sorted(updates, key=lambda u: (
        u.stack_label, u.resource_type, u.resource_label, u.operation))]
    return view


def update_summary(record: ResourceUpdateRecord) -> wire.ResourceUpdateView:
    """An update read without its change: which resource, its operation and state, the error of a failure."""
    failed = record.state in (UpdateState.FAILED, UpdateState.REJECTED)
    return wire.ResourceUpdateView(
        ResourceId=record.ksuid, ResourceType=record.resource_type, ResourceLabel=record.resource_label,
        StackName=record.stack_label, Operation=record.operation, State=record.state,  # type: ignore[arg-type]
        StartedAt=record.start_ts, GroupId=record.group_id, IsCascade=record.is_cascade or None,
        CascadeSource=record.cascade_source, ErrorMessage=(record.data.get("message") or None) if failed else None)


def update_progress(record: ResourceUpdateRecord) -> wire.ResourceUpdateView:
    """``update_summary`` with the update's progress (read with its data): attempts, duration, message."""
    return _with_progress(update_summary(record), record)


def _policy_view(change: PolicyChange, state: str) -> wire.PolicyUpdateView:
    return wire.PolicyUpdateView(PolicyLabel=change.label, PolicyType=change.policy_type,  # type: ignore[arg-type]
                                 StackLabel=change.stack, Operation=change.operation, State=state,  # type: ignore
                                 PolicyConfig=change.config, OldPolicyConfig=change.old_config,
                                 ReferencingStacks=change.referencing_stacks)


def _target_view(target: Json, state: str) -> wire.TargetUpdateView:
    operation = target["operation"]
    return wire.TargetUpdateView(TargetLabel=target["label"], Operation=operation, State=state,  # type: ignore
                                 Discoverable=target.get("discoverable", False),
                                 ExistingConfig=target.get("existing_config"), DesiredConfig=target.get("config"))


def plan_view(command_id: str, changeset: Changeset, shown: Sequence[ResourceChange], *,
              client_id: str) -> wire.CommandView:
    """The plan of ``changeset``, whose resource changes are given as ``shown`` (``command_records.shown_change``)."""
    return wire.CommandView(
        CommandId=command_id, Command=changeset.command, Mode=changeset.mode, Source="user", State="NotStarted",
        ResourceUpdates=[change_view(c, "NotStarted") for c in shown],
        TargetUpdates=[_target_view(t.to_json(), "NotStarted") for t in changeset.targets] or None,
        StackUpdates=[wire.StackUpdateView(StackLabel=s.label, Operation=s.operation, State="NotStarted",
                                           Description=s.description) for s in changeset.stacks] or None,
        PolicyUpdates=[_policy_view(p, "NotStarted") for p in changeset.policies] or None)


def stored_view(stored: StoredCommand) -> wire.CommandView:
    """A command read back: in full, or summarised when its updates were read without their documents."""
    if stored.summary:
        return summary_view(stored.record, stored.updates, progress=stored.progress)
    return command_view(stored.record, stored.updates)


def submit_response(submission: Submission, caller: Caller, *, with_updates: bool = True) -> wire.SubmitCommandResponse:
    """An apply's or destroy's answer: the plan as a command view, or that nothing needs to change. Without
    ``with_updates`` the plan lists no resource update (``answer_parts`` renders them one by one)."""
    changeset = submission.changeset
    fingerprint = dict(submission.fingerprint) if submission.fingerprint is not None else None
    if not changeset.has_changes:
        return wire.SubmitCommandResponse(CommandId=submission.command_id, Simulation=wire.SimulationView(
            ChangesRequired=False, BaselineStacks=changeset.absorbed or None, Fingerprint=fingerprint),
            SealedForma=submission.sealed_forma)
    shown = (submission.shown or tuple(shown_change(change) for change in changeset.resources)) if with_updates else ()
    view = plan_view(submission.command_id, changeset, shown, client_id=caller.client_id)
    return wire.SubmitCommandResponse(CommandId=submission.command_id, Simulation=wire.SimulationView(
        ChangesRequired=True, Command=view, Warnings=changeset.warnings or None, Fingerprint=fingerprint),
        SealedForma=submission.sealed_forma)


def update_uri(ksuid: str) -> str:
    """How a cancel answer names a resource update (the reference's resource URI)."""
    return f"svc://{ksuid}#"


def cancel_response(outcome: CancelOutcome) -> wire.CancelCommandResponse:
    states = {update_uri(u.ksuid): wire.CanceledUpdateState(
                  State=u.state, ForceCanceled=u.forced or None, CommandId=u.command_id, ResourceType=u.resource_type,
                  ResourceLabel=u.resource_label, StackName=u.stack)
              for u in outcome.updates}
    return wire.CancelCommandResponse(CommandIds=outcome.command_ids, ResourceUpdateStates=states or None,
                                      Forced=outcome.forced or None)


def conflict_data(error: ConflictingCommands) -> dict[str, Any]:
    """The refusal's ``data``: the conflicting commands as views."""
    return {**error.data, "ConflictingCommands": [stored_view(each).to_json() for each in error.commands]}
