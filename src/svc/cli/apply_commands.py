"""``svc apply`` and ``svc destroy``: simulate, show the plan, confirm, submit, follow.

Human mode simulates first and asks before changing anything; with ``--yes`` it submits at once and shows
the plan the agent answers with (the same plan, planned once). After a confirmation the submission carries the
shown plan's fingerprint, so the agent runs exactly that plan or refuses (``PlanChanged``) if the inventory moved
in between. Machine mode asks nothing: without ``--yes`` (or ``--simulate``) it refuses before anything is sent,
like human mode without a terminal. Otherwise it submits once and prints one document: the simulation,
``{"CommandId": …}`` (null when nothing needed to change and no command was stored), or with ``--wait`` the
finished command as ``svc command status ID`` prints it (``{"Commands": [the command]}``).

``svc apply PLANFILE`` applies a plan ``svc plan -o`` saved (``svc.cli.plan_files``), an apply's or a destroy's:
exactly it, or nothing.

The renderers of plans and progress (``svc.cli.plan_render``, ``svc.cli.watch``: Rich) are imported where they are
used: a command with nothing to change prints one line and loads no Rich (``svc.cli.output``).
"""

from __future__ import annotations

import enum
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from svc.cli import agent_api
from svc.cli.agent_errors import AgentRefused, moved_listing
from svc.cli.client import AgentClient, Connecting
from svc.cli.common import ConfigOption, given_options
from svc.cli.drift import explain_drift
from svc.cli.errors import CliError
from svc.cli.forma_commands import Mode, evaluate_with_flags
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.cli.plan_files import SavedPlan, is_saved_plan, read_plan
from svc.cli.waiting import PLANNING, waiting_line
from svc.model.wire import ListCommandStatusResponse, SubmitCommandResponse
from svc.pkl import stop_shared_server

SimulateOption = Annotated[bool, typer.Option("--simulate", help="Show what would change; change nothing.")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
WaitOption = Annotated[bool, typer.Option(
    "--wait", help="Block until the command finishes; exit 0 on Success, 1 otherwise.")]
ModeOption = Annotated[Mode, typer.Option("--mode", help="reconcile: the forma is the whole truth of its stacks "
                                                         "(what it drops is deleted); patch: only add and change.")]
ForceOption = Annotated[bool, typer.Option("--force", help="reconcile: overwrite changes made outside svc.")]


class OnDependents(enum.StrEnum):
    abort = "abort"
    cascade = "cascade"


@dataclass
class Submission:
    command: str  # apply | destroy
    title: str
    forma: dict[str, Any] | None
    fields: dict[str, Any] = field(default_factory=dict)
    simulate: bool = False
    yes: bool = False
    wait: bool = False
    expected_plan: dict[str, str] | None = None  # a saved plan's fingerprint: apply exactly it or nothing


def apply_command(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The forma (a .pkl file amending @svc/forma.pkl), or a plan that "
                                              "svc plan -o saved.", dir_okay=False)],
    mode: ModeOption = Mode.reconcile,
    simulate: SimulateOption = False,
    force: ForceOption = False,
    yes: YesOption = False,
    wait: WaitOption = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Apply a forma: simulate, show the plan, confirm, then follow the changes until done. Given a saved plan
    (svc plan -o), apply exactly it, or nothing if the inventory moved since it was made."""
    if is_saved_plan(file):
        submission = _saved_submission(ctx, file, read_plan(file), yes, wait)
        _check_confirmable(submission.command, output_consumer, yes=yes, simulate=False)
        raise typer.Exit(_run(Connecting(config), submission, output_consumer, output_schema))
    _check_confirmable("apply", output_consumer, yes=yes, simulate=simulate)
    connecting = Connecting(config)
    forma = evaluate_with_flags(file, ctx.args, command="apply", mode=mode.value, meanwhile=connecting.start)
    submission = Submission("apply", f"svc apply --mode {mode.value} {file}", forma.to_wire(),
                            {"mode": mode.value, "force": force}, simulate, yes, wait)
    raise typer.Exit(_run(connecting, submission, output_consumer, output_schema))


def destroy_command(
    ctx: typer.Context,
    file: Annotated[Path | None, typer.Argument(help="Destroy the resources of this forma.", dir_okay=False)] = None,
    query: Annotated[str, typer.Option("--query", help="Destroy the managed resources matching this query, e.g. "
                                                       "'stack:dev type:AWS::S3::Bucket'.")] = "",
    on_dependents: Annotated[OnDependents, typer.Option(
        "--on-dependents", help="abort: refuse when other resources depend on what would be deleted; "
                                "cascade: delete them too.")] = OnDependents.abort,
    simulate: SimulateOption = False,
    yes: YesOption = False,
    wait: WaitOption = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Destroy the resources of a forma, or those matching --query."""
    query = query.strip()
    if (file is None) == (not query):
        raise CliError("give destroy either a forma file or --query, not both and not neither")
    if file is None and ctx.args:
        raise CliError(f"unexpected arguments {' '.join(ctx.args)}; forma properties need a forma file")
    _check_confirmable("destroy", output_consumer, yes=yes, simulate=simulate)
    connecting = Connecting(config)
    forma = None
    if file is not None:
        forma = evaluate_with_flags(file, ctx.args, command="destroy", mode="reconcile",
                                    meanwhile=connecting.start).to_wire()
    title = f"svc destroy {file}" if file is not None else f"svc destroy --query '{query}'"
    submission = Submission("destroy", title, forma, {"query": query, "on_dependents": on_dependents.value},
                            simulate, yes, wait)
    raise typer.Exit(_run(connecting, submission, output_consumer, output_schema))


def _saved_submission(ctx: typer.Context, file: Path, saved: SavedPlan, yes: bool, wait: bool) -> Submission:
    """The submission of a saved plan: its forma, mode and force, and its fingerprint as the plan expected."""
    given = given_options(ctx, "mode", "force", "simulate")
    if given or ctx.args:
        extra = " ".join([*given, *ctx.args])
        raise CliError(f"{extra}: a saved plan is applied as it was made (its mode, force and properties are in "
                       f"it); make the plan again with them: svc plan -o {file} ... {saved.source}")
    fields = {"on_dependents": saved.on_dependents} if saved.command == "destroy" else \
        {"mode": saved.mode, "force": saved.force}
    return Submission(saved.command, f"svc apply {file} (saved by: {saved.title})", saved.forma, fields, yes=yes,
                      wait=wait, expected_plan=saved.plan.Fingerprint)


def _check_confirmable(command: str, consumer: Consumer, *, yes: bool, simulate: bool) -> None:
    """Refuses, before anything is evaluated or asked of the agent, a command that would have to ask for a
    confirmation nobody can give."""
    if consumer is Consumer.machine and not (yes or simulate):
        raise CliError(f"{command} in machine mode cannot ask for confirmation; pass --yes to go ahead, "
                       "or --simulate to only see the plan")


def _run(connecting: Connecting, submission: Submission, consumer: Consumer, schema: Schema) -> int:
    client = connecting.client()
    stop_shared_server(wait=False)  # evaluating is over; the agent may need this machine's CPUs for the command
    with client:
        if consumer is Consumer.machine:
            return _machine(client, submission, schema)
        if submission.expected_plan is not None:
            return _apply_saved(client, submission)
        return _human(client, submission)


def _submit(client: AgentClient, submission: Submission, simulate: bool,
            expected: dict[str, str] | None = None) -> SubmitCommandResponse:
    """``expected``: the fingerprint of the plan to run (a saved one, or the one shown); the agent refuses
    (``PlanChanged``) when it plans otherwise now."""
    expected = expected if expected is not None else submission.expected_plan
    fields = dict(submission.fields)
    if expected is not None:
        fields["expected_plan"] = json.dumps(expected, separators=(",", ":"))
    try:
        with waiting_line(PLANNING):
            return agent_api.submit(client, command=submission.command, action=submission.command,
                                    forma=submission.forma, simulate=simulate, **fields)
    except AgentRefused as refused:
        if refused.kind == "PlanChanged" and submission.expected_plan is None:  # the plan shown moments ago
            raise CliError(f"{submission.command} refused: the inventory changed since the plan was shown "
                           f"({moved_listing(refused.data)}); nothing was changed: run the command again to see "
                           "the new plan") from None
        raise


def _machine(client: AgentClient, submission: Submission, schema: Schema) -> int:
    response = _submit(client, submission, simulate=submission.simulate)
    if submission.simulate:
        emit(response.Simulation, Consumer.machine, schema, print)
        return 0
    if not submission.wait or not response.Simulation.ChangesRequired:
        # The agent answers no id ("") when nothing needed to change and it stored no command.
        emit({"CommandId": response.CommandId or None}, Consumer.machine, schema, print)
        return 0
    from svc.cli.watch import wait_quietly  # the plan's and the progress's renderers (Rich) load when used

    final = wait_quietly(client, response.CommandId)
    emit(ListCommandStatusResponse(Commands=[final]), Consumer.machine, schema, print)
    return 0 if final.State == "Success" else 1


def _human(client: AgentClient, submission: Submission) -> int:
    verb = submission.command
    # With --yes nothing comes between the simulation and the submission, so the submission itself answers
    # with its plan: the agent plans once instead of twice, and the plan shown is the one that runs.
    direct = submission.yes and not submission.simulate
    try:
        preview = _submit(client, submission, simulate=not direct)
    except AgentRefused as refused:
        if refused.kind == "ReconcileRejected":
            explain_drift(client, refused.data, submission.title)
        raise
    simulation = preview.Simulation
    if not simulation.ChangesRequired:
        console.print("No changes needed: the resources already match the forma." if verb == "apply"
                      else "No resources to destroy: nothing managed matches.", highlight=False)
        return _record_baseline(client, submission, preview, direct) if simulation.BaselineStacks else 0
    description = preview.Description.Text
    if description:
        console.print(description, highlight=False)
    from svc.cli.plan_render import render_plan

    render_plan(simulation, submission.title)
    if submission.simulate:
        console.print("Simulation only: nothing was changed.")
        return 0
    if not submission.yes and not _confirm(f"{verb.capitalize()} these changes?"):
        console.print(f"{verb.capitalize()} aborted; nothing was changed.")
        return 0
    response = preview if direct else _submit(client, submission, simulate=False, expected=simulation.Fingerprint)
    return _started(client, submission, response)


def _apply_saved(client: AgentClient, submission: Submission) -> int:
    """A saved plan: submitted with its fingerprint at once (it was shown when it was made); the agent applies
    exactly it or refuses."""
    console.print(submission.title, highlight=False, soft_wrap=True, markup=False)
    response = _submit(client, submission, simulate=False)
    simulation = response.Simulation
    if not simulation.ChangesRequired:
        if simulation.BaselineStacks:
            console.print(f"Recorded as the new baseline of stack(s) {', '.join(simulation.BaselineStacks)} "
                          f"(command {response.CommandId}).", highlight=False)
        else:
            console.print("No changes needed: the saved plan changes nothing.", highlight=False)
        return 0
    from svc.cli.plan_render import summary_line

    console.print(summary_line(simulation.Command), highlight=False)
    return _started(client, submission, response)


def _started(client: AgentClient, submission: Submission, response: SubmitCommandResponse) -> int:
    """The submitted command: followed to its end on a terminal (or with --wait), else how to follow it."""
    if not response.Simulation.ChangesRequired:
        console.print("No changes needed any more: someone else made them meanwhile.")
        return 0
    command_id = response.CommandId
    console.print(f"Command {command_id} started on the agent.", highlight=False)
    if not (submission.wait or console.is_terminal):
        console.print(f"Follow it with: svc command status {command_id} --follow", highlight=False)
        return 0
    from svc.cli.watch import follow_to_outcome

    return follow_to_outcome(client, command_id)


def _record_baseline(client: AgentClient, submission: Submission, preview: SubmitCommandResponse,
                     direct: bool) -> int:
    """A reconcile that changes no resource yet takes in drift (e.g. the forma ``svc extract`` wrote) is its
    stacks' new baseline: the drift is then no longer listed, nor refuses the next reconcile. Recording it is a
    change of what svc holds true, so it asks for consent like any other change."""
    stacks = ", ".join(preview.Simulation.BaselineStacks or [])
    if direct:  # --yes: the submission itself recorded it
        console.print(f"Recorded as the new baseline of stack(s) {stacks}: their changes made outside svc are "
                      f"taken in (command {preview.CommandId}).", highlight=False)
        return 0
    console.print(f"The forma takes in the changes made outside svc to stack(s) {stacks}: applying it records it "
                  "as their new baseline, and those changes are no longer drift.", highlight=False)
    if submission.simulate:
        console.print("Simulation only: nothing was recorded.")
        return 0
    if not _confirm("Record it as the new baseline?"):
        console.print("Nothing was recorded; the changes are still listed as drift.")
        return 0
    response = _submit(client, submission, simulate=False, expected=preview.Simulation.Fingerprint)
    if response.Simulation.ChangesRequired:  # an agent that checks no fingerprint: the stack changed meanwhile
        console.print(f"The stack changed meanwhile: command {response.CommandId} applies the forma.",
                      highlight=False)
        from svc.cli.watch import follow_to_outcome

        return follow_to_outcome(client, response.CommandId)
    console.print(f"Recorded as the new baseline (command {response.CommandId}).", highlight=False)
    return 0


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        raise CliError("confirmation needs an interactive terminal; pass --yes to go ahead without asking, "
                       "or --simulate to only see the plan")
    return typer.confirm(question, default=False)
