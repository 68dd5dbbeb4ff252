"""``svc agent …`` and ``svc status agent``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from svc.cli.client import AgentClient
from svc.cli.command_commands import status_command
from svc.cli.common import ConfigOption
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.config import cli_config
from svc.model.wire import PluginInfo, StatsView

agent_app = typer.Typer(help="Run and inspect the agent.", no_args_is_help=True)
status_app = typer.Typer(help="Check the agent.", no_args_is_help=True)


@agent_app.command("start")
def agent_start(
    config: Annotated[Path, typer.Option("--config", help="The agent config file (amends svc:/Config.pkl).",
                                         dir_okay=False)],
) -> None:
    """Start the agent in the foreground; stop it with Ctrl-C, SIGTERM or `svc agent stop`."""
    from svc.agent.lifecycle import start_agent  # the server stack loads only when an agent runs

    start_agent(config)


@agent_app.command("stop")
def agent_stop() -> None:
    """Stop the agent running on this machine (found through its PID file)."""
    from svc.agent.lifecycle import stop_agent

    pid = stop_agent()
    typer.echo(f"Stopped the agent (PID {pid}).")


def _stat_value(value: object) -> str:
    """Counts by key as ``a 2, b 1``; plugins as ``FAKE 0.1.0 (3 resources)``; anything else as is."""
    if isinstance(value, dict):
        return ", ".join(f"{key} {count}" for key, count in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(f"{p.Namespace} {p.Version} ({p.ResourceCount} resources)"
                         if isinstance(p, PluginInfo) else str(p) for p in value) or "none"
    return str(value)


def _render_stats(base_url: str) -> Callable[[StatsView], None]:
    def render(stats: StatsView) -> None:
        table = Table(show_header=False, box=None, pad_edge=False)
        table.add_row("Agent", base_url)
        table.add_row("Version", stats.Version)
        table.add_row("Agent id", stats.AgentId)
        for name in StatsView.__struct_fields__:
            if name not in ("Version", "AgentId"):
                table.add_row(name, _stat_value(getattr(stats, name)))
        console.print("[green]The agent is running.[/green]")
        console.print(table)

    return render


def show_agent_status(config: Path | None, consumer: Consumer, schema: Schema) -> None:
    # How the agent is now, without riding through an outage: scripts probe with it ("is an agent running?").
    with AgentClient(cli_config(config), retrying=False) as client:
        emit(client.stats(), consumer, schema, _render_stats(client.base_url))


@agent_app.command("status")
def agent_status(
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Check that the agent answers, and print its version and stats.

    It answers how the agent is now: unlike other commands, it does not wait for an unavailable agent."""
    show_agent_status(config, output_consumer, output_schema)


@status_app.command("agent")
def status_agent(
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Check connectivity to the agent, and print its version and stats.

    It answers how the agent is now: unlike other commands, it does not wait for an unavailable agent."""
    show_agent_status(config, output_consumer, output_schema)


# `svc status command` is the old name of `svc command status`, kept (deprecated) in this group.
status_app.command("command", deprecated=True)(status_command)
