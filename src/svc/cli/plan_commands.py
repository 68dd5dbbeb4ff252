"""``svc plan FILE``: what applying the forma would change, as a diff, changing nothing; ``--destroy``: what
destroying it would; ``-o PLANFILE`` saves the plan for ``svc apply PLANFILE`` (``svc.cli.plan_files``).

The agent simulates the apply or the destroy (the same planning as ``svc apply`` and ``svc destroy``); the plan is
shown by ``svc.cli.plan_render``. With ``--detailed-exitcode`` the exit code says whether it would change anything,
as Terraform's: 0 nothing to do, 2 changes, 1 an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from svc.cli import agent_api
from svc.cli.agent_errors import AgentRefused
from svc.cli.apply_commands import ForceOption, ModeOption, OnDependents
from svc.cli.client import Connecting
from svc.cli.common import ConfigOption, given_options
from svc.cli.drift import explain_drift
from svc.cli.errors import CliError
from svc.cli.forma_commands import Mode, evaluate_with_flags
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.cli.plan_files import SavedPlan, plan_title, write_plan
from svc.cli.waiting import PLANNING, waiting_line
from svc.model.wire import SubmitCommandResponse
from svc.pkl import stop_shared_server

CHANGES_EXIT_CODE = 2


def plan_command(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The forma (a .pkl file amending @svc/forma.pkl).", dir_okay=False)],
    mode: ModeOption = Mode.reconcile,
    force: ForceOption = False,
    destroy: Annotated[bool, typer.Option(
        "--destroy", help="Plan destroying the forma's resources instead (as svc destroy FILE would).")] = False,
    on_dependents: Annotated[OnDependents, typer.Option(
        "--on-dependents", help="--destroy: abort: refuse when other resources depend on what would be deleted; "
                                "cascade: delete them too.")] = OnDependents.abort,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", dir_okay=False, help="Save the plan to this file; svc apply FILE then applies exactly it, or "
                                            "nothing if the inventory moved since.")] = None,
    detailed_exitcode: Annotated[bool, typer.Option(
        "--detailed-exitcode", help="Exit 0 when nothing would change, 2 when something would, 1 on an error.")
                                 ] = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Show what applying a forma, or destroying it (--destroy), would change, as a diff; change nothing."""
    if destroy and (given := given_options(ctx, "mode", "force")):
        raise CliError(f"{' and '.join(given)}: how an apply treats the forma; a destroy plan takes neither")
    if not destroy and given_options(ctx, "on_dependents"):
        raise CliError("--on-dependents: how a destroy treats what depends on it; use it with --destroy")
    command = "destroy" if destroy else "apply"
    dependents = on_dependents.value if destroy else None
    connecting = Connecting(config)
    forma = evaluate_with_flags(file, ctx.args, command=command, mode="reconcile" if destroy else mode.value,
                                meanwhile=connecting.start)
    title = plan_title(str(file), mode.value, force, dependents)
    fields = {"on_dependents": dependents} if destroy else {"mode": mode.value, "force": force}
    client = connecting.client()
    stop_shared_server(wait=False)  # evaluating is over
    with client:
        try:
            with waiting_line(PLANNING):
                response = agent_api.submit(client, command=command, action="plan", forma=forma.to_wire(),
                                            simulate=True, seal_secrets=out is not None, **fields)
        except AgentRefused as refused:
            if refused.kind == "ReconcileRejected" and output_consumer is Consumer.human:
                explain_drift(client, refused.data, title)
            raise
    simulation = response.Simulation
    if out is not None:
        write_plan(out, _saved(response, file, mode, force, dependents))
    if output_consumer is Consumer.machine:
        emit(simulation, Consumer.machine, output_schema, print)
    else:
        _show(response, title, out, destroy)
    changes = simulation.ChangesRequired or bool(simulation.BaselineStacks)
    raise typer.Exit(CHANGES_EXIT_CODE if detailed_exitcode and changes else 0)


def _saved(response: SubmitCommandResponse, file: Path, mode: Mode, force: bool,
           on_dependents: str | None) -> SavedPlan:
    if response.SealedForma is None or response.Simulation.Fingerprint is None:
        raise CliError("this agent cannot save plans (it answered no sealed forma or fingerprint); upgrade it to "
                       "this svc's version, or apply the forma itself")
    return SavedPlan(source=str(file), mode=mode.value, force=force, plan=response.Simulation,
                     forma=response.SealedForma, on_dependents=on_dependents)


def _show(response: SubmitCommandResponse, title: str, out: Path | None, destroy: bool) -> None:
    simulation = response.Simulation
    if response.Description.Text:
        console.print(response.Description.Text, highlight=False, markup=False)
    if simulation.ChangesRequired:
        from svc.cli.plan_render import render_plan  # Rich: only for a plan to show (svc.cli.output)

        render_plan(simulation, title)
    elif simulation.BaselineStacks:
        console.print(f"No changes to resources. Applying the forma records it as the new baseline of stack(s) "
                      f"{', '.join(simulation.BaselineStacks)}: their changes made outside svc are taken in and no "
                      "longer drift.", highlight=False, markup=False)
    elif destroy:
        console.print("No resources to destroy: nothing managed matches the forma.", highlight=False)
    else:
        console.print("No changes: the resources already match the forma.", highlight=False)
    if out is not None:
        console.print(f"Saved the plan to {out}. Apply exactly it with: svc apply {out}", highlight=False,
                      markup=False, soft_wrap=True)
