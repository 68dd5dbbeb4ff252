"""``svc drift [--stack S]`` (what changed outside svc since each stack's last reconcile, as a diff) and
``svc reconcile STACK`` (the stack's auto-reconcile now, followed like ``apply --wait``)."""

from __future__ import annotations

from typing import Annotated

import typer

from svc.cli import agent_api
from svc.cli.client import AgentClient, connect
from svc.cli.common import ConfigOption
from svc.cli.drift import by_resource, print_modified
from svc.cli.errors import CliError
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.cli.watch import follow_to_outcome, wait_quietly
from svc.config import cli_config
from svc.model.wire import (
    DriftedResource,
    ListCommandStatusResponse,
    ReconcileRejectedData,
    StackDriftView,
)

StackOption = Annotated[str | None, typer.Option("--stack", help="Only this stack (default: every stack).")]
NoWaitOption = Annotated[bool, typer.Option("--no-wait", help="Print the command's id and return at once.")]


def _drift(client: AgentClient, stack: str) -> list[DriftedResource]:
    found = agent_api.stack_drift(client, stack)
    if found is None:
        raise CliError(f"no stack named {stack}; list the stacks with: svc inventory stacks")
    return found.ModifiedResources


def drift_command(
    stack: StackOption = None,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Show what changed outside svc since each stack's last reconcile, as old → new.

    Each resource, and each changed property (secrets as (sensitive)). Machine output: {"ModifiedStacks": {stack:
    {"ModifiedResources": […]}}}, the stacks with drift only."""
    with connect(cli_config(config)) as client:
        if stack is not None:
            entries = _drift(client, stack)
            modified = {stack: StackDriftView(ModifiedResources=entries)} if entries else {}
            asked = 1
        else:  # every stack in one request: a request a stack cost ~2 ms each, 1 s for 500 stacks
            every = agent_api.every_drift(client)
            modified, asked = every.ModifiedStacks, every.Stacks
    drifted = ReconcileRejectedData(ModifiedStacks=modified)
    emit(drifted, output_consumer, output_schema, lambda _: _show_drift(drifted, asked))


def _show_drift(drifted: ReconcileRejectedData, asked: int) -> None:
    stacks = drifted.ModifiedStacks
    if not stacks:
        where = "the stack" if asked == 1 else f"any of the {asked} stacks" if asked else "any stack"
        console.print(f"No drift: nothing changed outside svc in {where} since the last reconcile.",
                      highlight=False)
        return
    count = sum(len(entry.ModifiedResources) for entry in stacks.values())
    console.print(f"{count} resource(s) changed outside svc since the last reconcile:", highlight=False)
    for label, entry in stacks.items():
        print_modified(label, entry.ModifiedResources, by_resource(entry.ModifiedResources))
    console.print("\nKeep a change: svc extract --query 'stack:STACK' FILE and fold it into the forma; revert it: "
                  "svc reconcile STACK (with an auto-reconcile policy) or svc apply --mode reconcile --force FILE.",
                  highlight=False, markup=False)


def reconcile_command(
    stack: Annotated[str, typer.Argument(help="The stack to reconcile (it needs an auto-reconcile policy).")],
    no_wait: NoWaitOption = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Run the stack's auto-reconcile now, reverting what changed outside svc, and follow it.

    It re-applies the stack's last reconcile. Machine output: the finished command as `svc command status ID`
    prints it ({"Commands": [the command]}), or {"CommandId": …} with --no-wait (null: no drift)."""
    client = connect(cli_config(config))
    with client:
        command_id = agent_api.reconcile_stack(client, stack)
        raise typer.Exit(_follow(client, stack, command_id, no_wait, output_consumer, output_schema))


def _follow(client: AgentClient, stack: str, command_id: str | None, no_wait: bool, consumer: Consumer,
            schema: Schema) -> int:
    if consumer is Consumer.machine:
        if no_wait or command_id is None:
            emit({"CommandId": command_id}, consumer, schema, print)
            return 0
        final = wait_quietly(client, command_id)
        emit(ListCommandStatusResponse(Commands=[final]), consumer, schema, print)
        return 0 if final.State == "Success" else 1
    if command_id is None:
        console.print(f"No drift in stack {stack}: nothing to reconcile.", highlight=False)
        return 0
    console.print(f"Command {command_id} started on the agent: reconciling stack {stack}.", highlight=False)
    if no_wait:
        console.print(f"Follow it with: svc command status {command_id} --follow", highlight=False)
        return 0
    return follow_to_outcome(client, command_id)
