"""``svc plugin list``: the plugins installed with this CLI (local; the agent is not asked)."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit

plugin_app = typer.Typer(help="Resource plugins installed on this machine.", no_args_is_help=True)
_SHOWN_TYPES = 8  # a plugin with hundreds of types still gets one readable row


def _table(plugins: list[dict[str, Any]]) -> None:
    if not plugins:
        console.print("No plugins installed. Install one with pip (a distribution with an svc.plugins entry point).")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("Namespace", "Version", "Summary", "Resource types"):
        table.add_column(column, overflow="fold")
    for plugin in plugins:
        types = plugin.get("resourceTypes") or []
        shown = ", ".join(types[:_SHOWN_TYPES]) + (f" (+{len(types) - _SHOWN_TYPES} more)"
                                                   if len(types) > _SHOWN_TYPES else "")
        summary = plugin.get("summary", "")
        if plugin.get("loadStatus") == "invalid":
            summary = f"[red]invalid:[/red] {plugin.get('error', '')}"
        table.add_row(plugin["namespace"], plugin.get("installedVersion", ""), summary, shown)
    console.print(table)


@plugin_app.command("list")
def list_plugins(output_consumer: ConsumerOption = Consumer.human, output_schema: SchemaOption = Schema.json) -> None:
    """List the installed plugins: namespace, version and resource types (machine: {plugins: [...]})."""
    from svc.plugins.listing import installed_listing

    plugins = installed_listing()
    emit({"plugins": plugins}, output_consumer, output_schema, lambda data: _table(data["plugins"]))
