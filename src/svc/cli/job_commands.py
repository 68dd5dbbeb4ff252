"""``svc sync``, ``svc discover`` and ``svc ttl check``: run one of the agent's background jobs now
(``POST /admin/…``) and print what the run did."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from svc.cli import agent_api
from svc.cli.answers import Shape
from svc.cli.client import connect
from svc.cli.common import ConfigOption
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.cli.watch import wait_quietly
from svc.config import cli_config
from svc.model.wire import (
    ChangedResource,
    CommandView,
    DiscoveredResource,
    DiscoveryReportView,
    SyncReportView,
    TtlSweepView,
)

ttl_app = typer.Typer(help="Stack TTL policies.", no_args_is_help=True)


def _run(config: Path | None, job: str, shape: type[Shape]) -> Shape:
    client = connect(cli_config(config))
    with client:
        return agent_api.run_job(client, job, shape)


def _print_resource(operation: str, resource: ChangedResource | DiscoveredResource) -> None:
    """``  update  stack/label (Type)``."""
    console.print(f"  {operation:<7} {resource.Stack}/{resource.Label} ({resource.Type})", highlight=False,
                  markup=False)


def sync_command(
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Synchronize now and print the resources whose stored state changed outside svc.

    The agent reads every resource it knows and stores what changed. Machine output: {"CommandId": … (null:
    nothing changed), "Changed": […]}."""
    report = _run(config, "synchronize", SyncReportView)
    # CommandId stays in the document when null: it says that nothing changed.
    document = {"CommandId": report.CommandId, "Changed": [change.to_json() for change in report.Changed]}
    emit(document, output_consumer, output_schema, lambda _: _show_sync(report.Changed))


def _show_sync(changed: list[ChangedResource]) -> None:
    if not changed:
        console.print("Synchronized: nothing changed outside svc since the last synchronization "
                      "(all drift since the last reconcile: svc drift).", highlight=False, soft_wrap=True)
        return
    console.print(f"Synchronized: {len(changed)} resource(s) changed outside svc:", highlight=False)
    for change in changed:
        _print_resource(change.Operation, change)
    console.print("See each change with: svc drift", highlight=False)


def discover_command(
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Run discovery now and print the resources it found that are new.

    The agent lists every discoverable target for resources svc does not manage yet and stores them (unmanaged).
    Machine output: the agent's report (counts, Denied, Errors, and
    Resources: the new ones)."""
    report = _run(config, "discover", DiscoveryReportView)
    emit(report, output_consumer, output_schema, _show_discovery)


def _show_discovery(report: DiscoveryReportView) -> None:
    found = report.Resources
    console.print(f"Discovery listed {report.Listed} resource(s) on {report.Targets} target(s); "
                  f"{len(found) or 'none'} new.", highlight=False)
    for resource in found:
        _print_resource("found", resource)
    if found:
        console.print("Adopt them with: svc extract --query 'managed:false' FILE, then apply the forma.",
                      highlight=False)
    for denied in report.Denied:
        console.print(f"[yellow]Not allowed to list: {denied}[/yellow]", highlight=False)
    for error in report.Errors:
        console.print(f"[red]Failed: {error}[/red]", highlight=False)


@ttl_app.command("check")
def ttl_check_command(
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Return once the destroys have started.")] = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Run the TTL check now: destroy the stacks whose TTL policy expired, and wait for the destroys.

    Machine output: {"ExpiredStacks": […], "Commands": [the destroy commands, finished unless --no-wait]}."""
    client = connect(cli_config(config))
    with client:
        sweep = agent_api.run_job(client, "check-ttl", TtlSweepView)
        finished = [] if no_wait else [wait_quietly(client, command_id) for command_id in sweep.command_ids]
    commands = ([{"CommandId": command_id} for command_id in sweep.command_ids] if no_wait
                else [command.to_json() for command in finished])
    emit({"ExpiredStacks": sweep.expired_stacks, "Commands": commands}, output_consumer, output_schema,
         lambda _: _show_sweep(sweep, finished, no_wait))
    if any(command.State != "Success" for command in finished):
        raise typer.Exit(1)


def _show_sweep(sweep: TtlSweepView, finished: list[CommandView], no_wait: bool) -> None:
    if not sweep.expired_stacks:
        console.print("No stack has expired.")
        return
    console.print(f"Expired: {', '.join(sweep.expired_stacks)}.", highlight=False)
    if no_wait:
        for command_id in sweep.command_ids:
            console.print(f"Destroying: command {command_id} (follow it with: "
                          f"svc command status {command_id} --follow)", highlight=False)
        return
    for command in finished:
        command_id, state = command.CommandId, command.State
        if state == "Success":
            console.print(f"[green]Destroyed: command {command_id} succeeded.[/green]", highlight=False)
        else:
            console.print(f"[red]Destroy command {command_id} ended {state}.[/red] Details: svc command status "
                          f"{command_id}", highlight=False)
