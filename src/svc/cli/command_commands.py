"""``svc command status|list``, ``svc status command`` (deprecated alias) and ``svc cancel``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from svc.cli import agent_api
from svc.cli.client import AgentClient, connect
from svc.cli.common import ConfigOption
from svc.cli.errors import CliError
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.cli.render import render_command, render_command_list
from svc.cli.watch import follow_to_outcome, wait_quietly
from svc.config import cli_config
from svc.model.states import TERMINAL_COMMAND_STATES
from svc.model.wire import CancelCommandResponse, CanceledUpdateState, CommandView, ListCommandStatusResponse

command_app = typer.Typer(help="Follow the commands the agent runs.", no_args_is_help=True)

QueryOption = Annotated[str, typer.Option("--query", help="Command query, e.g. 'status:InProgress', "
                                                          "'client:me command:apply', 'stack:prod'.")]
_BARE_ID = re.compile(r"^\s*id:(\S+)\s*$")
_LIST_CEILING = 200  # the agent's ceiling


def _show_one(config: Path | None, command_id: str | None, consumer: Consumer, schema: Schema) -> None:
    client = connect(cli_config(config))
    with client:
        if command_id is not None:
            found = agent_api.command(client, command_id)
            if found is None:
                raise CliError(f"command not found: {command_id}; list the recent ones with: svc command list")
            commands = [found]
        else:
            commands = agent_api.commands(client, scope="client")
    if consumer is Consumer.machine:
        emit(ListCommandStatusResponse(Commands=commands), consumer, schema, print)
    elif not commands:
        console.print("This client has run no commands yet.")
    else:
        render_command(commands[0])
        if commands[0].State not in TERMINAL_COMMAND_STATES:
            console.print(f"Still running; follow it with: svc command status {commands[0].CommandId} --follow",
                          highlight=False)


def _follow_one(config: Path | None, command_id: str | None, consumer: Consumer, schema: Schema) -> int:
    """Re-attaches to a command (after Ctrl-C, or from another shell) and follows it to its end as ``apply --wait``
    does: the live view on a terminal, a line per finished update otherwise, the finished command in machine
    mode; the exit code: 0 when it succeeded, else 1."""
    client = connect(cli_config(config))
    with client:
        command = _followed(client, command_id)
        if consumer is Consumer.human:
            return follow_to_outcome(client, command.CommandId)
        final = wait_quietly(client, command.CommandId)
    emit(ListCommandStatusResponse(Commands=[final]), consumer, schema, print)
    return 0 if final.State == "Success" else 1


def _followed(client: AgentClient, command_id: str | None) -> CommandView:
    if command_id is None:  # its id is all it takes: its updates are counted, not read, then followed
        latest = agent_api.commands(client, scope="client", max_results=1, counts=True)
        if not latest:
            raise CliError("this client has run no commands yet; give the id of the command to follow "
                           "(svc command list shows them)")
        return latest[0]
    found = agent_api.command(client, command_id)
    if found is None:
        raise CliError(f"command not found: {command_id}; list the recent ones with: svc command list")
    return found


def _list(config: Path | None, query: str, max_results: int, consumer: Consumer, schema: Schema) -> None:
    if max_results < 0:
        raise CliError("--max-results must be 0 (the most the agent allows) or more")
    client = connect(cli_config(config))
    with client:
        # The table shows each command's updates counted by state: only the machine document lists them.
        commands = agent_api.commands(client, query=query.strip(), scope="agent",
                                      max_results=max_results or _LIST_CEILING, counts=consumer is Consumer.human)
    if consumer is Consumer.machine:
        emit(ListCommandStatusResponse(Commands=commands), consumer, schema, print)
    elif not commands:
        console.print("No commands match." if query.strip() else "No commands yet.")
    else:
        render_command_list(commands)


@command_app.command("status")
def command_status(
    command_id: Annotated[str | None, typer.Argument(help="The command id (default: this client's latest).",
                                                     metavar="[ID]")] = None,
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Follow the command until it ends (live on a terminal, a line per finished resource "
                               "otherwise); exit 0 on Success, 1 otherwise.")] = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Show one command and the state of each of its resource updates, or follow it to its end."""
    if follow:
        raise typer.Exit(_follow_one(config, command_id, output_consumer, output_schema))
    _show_one(config, command_id, output_consumer, output_schema)


@command_app.command("list")
def command_list(
    query: QueryOption = "",
    max_results: Annotated[int, typer.Option("--max-results", help="At most this many (0: 200).")] = 50,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """List commands of every client, newest first: each with its resource updates counted by state (the machine
    document lists every update)."""
    _list(config, query, max_results, output_consumer, output_schema)


def status_command(
    query: QueryOption = "",
    max_results: Annotated[int, typer.Option("--max-results", help="At most this many (0: 200).")] = 10,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Deprecated: use `svc command status` or `svc command list`."""
    print("Warning: `svc status command` is deprecated; use `svc command status [ID]` or `svc command list`.",
          file=sys.stderr)
    bare = _BARE_ID.match(query)
    if not query.strip() or bare:
        _show_one(config, bare[1] if bare else None, output_consumer, output_schema)
    else:
        _list(config, query, max_results, output_consumer, output_schema)


def cancel_command(
    query: QueryOption = "",
    force: Annotated[bool, typer.Option("--force", help="End the commands at once: operations already running "
                                                        "are abandoned and may leave resources behind.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask to confirm --force.")] = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Cancel in-progress commands: those matching --query, else this client's latest."""
    if force and not yes:
        if not sys.stdin.isatty():
            raise CliError("--force needs confirmation on an interactive terminal; pass --yes to force without "
                           "asking")
        if not typer.confirm("Force-cancel? Operations already running are abandoned and may leave resources "
                             "behind.", default=False):
            console.print("Cancel aborted.")
            return
    client = connect(cli_config(config))
    with client:
        outcome = agent_api.cancel(client, query=query.strip(), force=force)
    if output_consumer is Consumer.machine:
        emit(outcome, output_consumer, output_schema, print)
        return
    if outcome is None:
        console.print("No commands to cancel.")
        return
    _render_cancel(outcome)


def _render_cancel(outcome: CancelCommandResponse) -> None:
    """Per command: how many updates stopped having changed nothing, which are still in a plugin call and finish
    first, and (forced) which were abandoned during one, by type, label and stack."""
    forced = " (forced)" if outcome.Forced else ""
    states = list((outcome.ResourceUpdateStates or {}).values())
    for command_id in outcome.CommandIds:
        mine = [state for state in states if state.CommandId == command_id]
        stopped = sum(1 for state in mine if state.State == "Canceled" and not state.ForceCanceled)
        console.print(f"Canceled command {command_id}{forced}: {stopped} resource update(s) stopped before changing "
                      "anything.", highlight=False, soft_wrap=True)
        running = [_update_name(state) for state in mine if state.State == "InProgress"]
        if running:
            console.print(f"Still running (they finish first): {', '.join(running)}; follow with: "
                          f"svc command status {command_id} --follow", highlight=False, soft_wrap=True)
    abandoned = [_update_name(state) for state in states if state.ForceCanceled]
    if abandoned:
        console.print("Abandoned while running (they may exist in your cloud; check them with svc inventory):",
                      highlight=False)
        for name in abandoned:
            console.print(f"  {name}", highlight=False, soft_wrap=True)


def _update_name(state: CanceledUpdateState) -> str:
    return f"{state.ResourceType} {state.ResourceLabel} (stack {state.StackName})"
