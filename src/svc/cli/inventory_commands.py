"""``svc inventory resources|stacks|targets|policies`` (``svc inventory`` alone lists resources)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table
from rich.text import Text

from svc.cli import agent_api, answers
from svc.cli.client import connect
from svc.cli.common import ConfigOption
from svc.cli.errors import CliError
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.cli.render import moment
from svc.config import cli_config
from svc.model.wire import PolicyView, ResourceSummary, StackView, TargetView, Wire

inventory_app = typer.Typer(help="What the agent manages and has discovered.")

QueryOption = Annotated[str, typer.Option("--query", help="e.g. 'stack:prod type:AWS::S3::Bucket managed:false'; "
                                                          "targets: 'label:eu-* namespace:AWS'.")]
MaxResultsOption = Annotated[int | None, typer.Option(
    "--max-results", help="At most this many (default 200 for people, all for machines; 0: all).")]
_HUMAN_DEFAULT = 200
Row = TypeVar("Row", bound=Wire)
_EMPTY_FORMA: dict[str, Any] = {"Description": {}, "Stacks": [], "Targets": [], "Resources": []}


def _limit(max_results: int | None, consumer: Consumer) -> int:
    if max_results is not None and max_results < 0:
        raise CliError("--max-results must be 0 (all) or more")
    if max_results is None:
        return _HUMAN_DEFAULT if consumer is Consumer.human else 0
    return max_results


def _fetch(config: Path | None, path: str, shape: type[Row], query: str, limit: int) -> list[Row]:
    client = connect(cli_config(config))
    with client:
        return agent_api.inventory(client, path, shape, query=query.strip(), max_results=limit)


def _table(columns: tuple[str, ...]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _show(rows: list[Row], limit: int, noun: str, render: Callable[[list[Row]], Table]) -> None:
    if not rows:
        console.print(f"No {noun} found.")
        return
    console.print(render(rows))
    if limit and len(rows) >= limit:
        console.print(f"Showing the first {limit} {noun}; pass --max-results 0 for all.", highlight=False)


def _list(rows: list[Row], limit: int, noun: str, render: Callable[[list[Row]], Table], consumer: Consumer,
          schema: Schema) -> None:
    """Machine output: ``{"Stacks": [the rows as the agent gave them]}`` (``Targets``, ``Policies``): the key the
    forma of ``svc inventory resources`` holds them under, as ``svc command list`` holds ``Commands``; human:
    ``_show``."""
    if consumer is Consumer.machine:
        emit({noun.capitalize(): rows}, consumer, schema, print)
    else:
        _show(rows, limit, noun, render)


def _resources_table(rows: list[ResourceSummary]) -> Table:
    table = _table(("Type", "Label", "Stack", "Target", "Native ID", "Managed"))
    for row in rows:
        managed = Text("yes") if row.Managed else Text("⚠ unmanaged", style="yellow")
        table.add_row(row.Type, row.Label, row.Stack, row.Target or "", row.NativeID or "", managed)
    return table


def list_resources(config: Path | None, query: str, max_results: int | None, consumer: Consumer,
                   schema: Schema) -> None:
    limit = _limit(max_results, consumer)
    if consumer is Consumer.machine:
        client = connect(cli_config(config))
        with client:
            forma = agent_api.inventory_forma(client, query.strip(), max_results=limit)
        emit(_EMPTY_FORMA if forma is None else forma, consumer, schema, print)
        return
    _show(_fetch(config, "/resources/summary", ResourceSummary, query, limit), limit, "resources", _resources_table)


@inventory_app.callback(invoke_without_command=True)
def inventory(
    ctx: typer.Context,
    query: QueryOption = "",
    max_results: MaxResultsOption = None,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """List resources (same as `svc inventory resources`)."""
    if ctx.invoked_subcommand is None:
        list_resources(config, query, max_results, output_consumer, output_schema)


@inventory_app.command("resources")
def inventory_resources(
    query: QueryOption = "",
    max_results: MaxResultsOption = None,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """List resources, managed and discovered (machine output: a forma with their stacks and targets)."""
    list_resources(config, query, max_results, output_consumer, output_schema)


def _policy(document: dict[str, Any]) -> str:
    """``ttl app-ttl-1a2b3c4d (3600s)``, ``auto-reconcile nightly (every 300s)`` or ``policy://shared``."""
    policy = answers.policy(document)
    if policy.ref is not None:
        return policy.ref
    if policy.type == "auto-reconcile":
        detail = f"every {policy.interval_seconds}s"
    elif policy.expires_at:
        detail = f"until {policy.expires_at}"
    else:
        detail = f"{policy.ttl_seconds}s"
    return f"{policy.type} {policy.label or ''} ({detail})".replace("  ", " ")


def _stacks_table(rows: list[StackView]) -> Table:
    table = _table(("Label", "Description", "Policies", "Created"))
    for row in rows:
        policies = ", ".join(_policy(p) for p in row.Policies or [])
        table.add_row(row.Label, row.Description or "", policies, moment(row.CreatedAt))
    return table


@inventory_app.command("stacks")
def inventory_stacks(
    max_results: MaxResultsOption = None,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """List stacks with their policies."""
    limit = _limit(max_results, output_consumer)
    rows = _fetch(config, "/stacks", StackView, "", limit)
    _list(rows, limit, "stacks", _stacks_table, output_consumer, output_schema)


def _policies_table(rows: list[PolicyView]) -> Table:
    table = _table(("Label", "Type", "Policy", "Stacks"))
    for row in rows:
        table.add_row(row.Label, row.Type, _policy(row.Config), ", ".join(row.AttachedStacks or []))
    return table


@inventory_app.command("policies")
def inventory_policies(
    max_results: MaxResultsOption = None,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """List the policies declared on their own (shared by label) and the stacks using them."""
    limit = _limit(max_results, output_consumer)
    rows = _fetch(config, "/policies", PolicyView, "", 0)
    rows = rows[:limit] if limit else rows
    _list(rows, limit, "policies", _policies_table, output_consumer, output_schema)


def _targets_table(rows: list[TargetView]) -> Table:
    table = _table(("Label", "Namespace", "Discoverable", "Config"))
    for row in rows:
        config = json.dumps(row.Config or {}, separators=(",", ":"))
        table.add_row(row.Label, row.Namespace, "yes" if row.Discoverable else "no", config)
    return table


@inventory_app.command("targets")
def inventory_targets(
    query: QueryOption = "",
    max_results: MaxResultsOption = None,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """List targets (query keys: label, namespace, discoverable)."""
    limit = _limit(max_results, output_consumer)
    rows = _fetch(config, "/targets", TargetView, query, limit)
    _list(rows, limit, "targets", _targets_table, output_consumer, output_schema)
