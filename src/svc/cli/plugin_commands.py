"""``svc plugin``: ``list`` the plugins installed with this CLI (local); ``install``, ``update``, ``uninstall`` and
``search`` ask the agent, which installs into its own environment and starts or stops the plugins at once; ``init``
and ``test`` are for plugin authors (a new plugin distribution; the conformance kit on an installed plugin), local.

The package source is named as for ``svc upgrade`` (``--index-url`` / ``--find-links``, else ``cli.upgrade`` in
the CLI config); when neither names one, the agent uses the source its own svc came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from svc.cli.agent_errors import raise_for
from svc.cli.client import connect
from svc.cli.common import ConfigOption
from svc.cli.errors import CliError
from svc.cli.http import Timeout
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, console, emit
from svc.cli.package_options import FindLinksOption, IndexUrlOption, named_source
from svc.config import cli_config

plugin_app = typer.Typer(help="Resource plugins: list the installed ones; install, update, uninstall and search "
                              "through the agent; init and test your own.", no_args_is_help=True)
_SHOWN_TYPES = 8  # a plugin with hundreds of types still gets one readable row
# pip downloads and installs while the request waits; the agent answers when the plugin runs (or why not).
_PIP_TIMEOUT = Timeout(900.0, connect=5.0)
PackagesArgument = Annotated[list[str], typer.Argument(
    help="Plugin distributions, NAME or NAME==VERSION (e.g. svc-plugin-aws==1.2.0).", show_default=False)]


def _table(plugins: list[dict[str, Any]]) -> None:
    if not plugins:
        console.print("No plugins installed. Install one with: svc plugin install NAME (svc plugin search lists "
                      "what the package source offers).")
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


def _package(argument: str) -> dict[str, str]:
    name, _, version = argument.partition("==")
    if not name.strip() or any(mark in argument for mark in "<>~!@ ") or argument.count("==") > 1:
        raise CliError(f"{argument!r} is not NAME or NAME==VERSION (an exact version, e.g. svc-plugin-aws==1.2.0)")
    return {"name": name.strip(), **({"version": version.strip()} if version.strip() else {})}


def _source_members(index_url: str | None, find_links: list[str] | None, config: Path | None) -> dict[str, Any]:
    source = named_source(index_url, find_links, config)
    if source is None:
        return {}
    return {key: value for key, value in source.document().items() if value}


def _operations_table(done: dict[str, Any]) -> None:
    for operation in done.get("operations") or []:
        namespaces = ", ".join(operation.get("namespaces") or [])
        version = operation.get("version") or ""
        action = {"install": "installed", "update": "updated to", "remove": "uninstalled",
                  "noop": "unchanged:"}.get(operation.get("action", ""), operation.get("action", ""))
        console.print(f"{operation['name']} {action} {version}".strip()
                      + (f" (plugin {namespaces})" if namespaces else ""))
    for warning in done.get("warnings") or []:
        console.print(f"[yellow]Warning:[/yellow] {warning}")


def _manage(action: str, body: dict[str, Any], config: Path | None, consumer: Consumer, schema: Schema) -> None:
    client = connect(cli_config(config))
    with client:
        if consumer is Consumer.human:
            names = ", ".join(package["name"] + (f"=={package['version']}" if "version" in package else "")
                              for package in body.get("packages") or []) or "every installed plugin"
            typer.echo(f"Asking the agent at {client.base_url} to {action} {names}…", err=True)
        response = client.request("POST", f"/plugins/{action}", json=body, timeout=_PIP_TIMEOUT)
        raise_for(response, f"plugin {action}")
    emit(response.json(), consumer, schema, _operations_table)


@plugin_app.command("install")
def install(packages: PackagesArgument, index_url: IndexUrlOption = None, find_links: FindLinksOption = None,
            config: ConfigOption = None, output_consumer: ConsumerOption = Consumer.human,
            output_schema: SchemaOption = Schema.json) -> None:
    """Install plugins into the agent's environment and start them, without a restart.

    A distribution that is no svc plugin (no svc.plugins entry point, or a manifest that does not evaluate) is
    refused and uninstalled again."""
    body = {"packages": [_package(package) for package in packages],
            **_source_members(index_url, find_links, config)}
    _manage("install", body, config, output_consumer, output_schema)


@plugin_app.command("update")
def update(packages: Annotated[list[str] | None, typer.Argument(
               help="Plugins to update, NAME or NAME==VERSION (none: every installed one).",
               show_default=False)] = None,
           index_url: IndexUrlOption = None, find_links: FindLinksOption = None, config: ConfigOption = None,
           output_consumer: ConsumerOption = Consumer.human, output_schema: SchemaOption = Schema.json) -> None:
    """Update plugins on the agent to the newest (or the given) version and restart them on the new code."""
    body = {"packages": [_package(package) for package in packages or []],
            **_source_members(index_url, find_links, config)}
    _manage("update", body, config, output_consumer, output_schema)


@plugin_app.command("uninstall")
def uninstall(names: Annotated[list[str], typer.Argument(
                  help="Plugins to remove: distribution name, plugin name or namespace.", show_default=False)],
              config: ConfigOption = None, output_consumer: ConsumerOption = Consumer.human,
              output_schema: SchemaOption = Schema.json) -> None:
    """Stop plugins on the agent and uninstall them; refused while a running command changes their resources."""
    _manage("uninstall", {"packages": [{"name": name} for name in names]}, config, output_consumer, output_schema)


def _search_table(data: dict[str, Any]) -> None:
    plugins = data["plugins"]
    if not plugins:
        console.print("No plugin matches.")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("Package", "Namespace", "Category", "Versions", "Installed", "Summary"):
        table.add_column(column, overflow="fold")
    for plugin in plugins:
        table.add_row(plugin.get("package", plugin["name"]), plugin.get("namespace", ""), plugin.get("category", ""),
                      ", ".join(plugin.get("availableVersions") or []), plugin.get("installedVersion", ""),
                      plugin.get("summary", ""))
    console.print(table)


@plugin_app.command("search")
def search(query: Annotated[str, typer.Argument(help="Words to look for in names and summaries.")] = "",
           category: Annotated[str, typer.Option("--category", help="Only plugins of this category.")] = "",
           plugin_type: Annotated[str, typer.Option("--type", help="Only plugins of this type (resource).")] = "",
           index_url: IndexUrlOption = None, find_links: FindLinksOption = None, config: ConfigOption = None,
           output_consumer: ConsumerOption = Consumer.human, output_schema: SchemaOption = Schema.json) -> None:
    """List the plugins the package source offers (projects named svc-plugin-*), as the agent sees them."""
    params: dict[str, Any] = {"scope": "available"}
    for key, value in (("q", query), ("category", category), ("type", plugin_type)):
        if value:
            params[key] = value
    source = _source_members(index_url, find_links, config)
    params.update({key: value for key, value in source.items()})
    client = connect(cli_config(config))
    with client:
        response = client.request("GET", "/plugins", params=params, timeout=_PIP_TIMEOUT)
        raise_for(response, "plugin search")
    emit(response.json(), output_consumer, output_schema, _search_table)


@plugin_app.command("init")
def init(name: Annotated[str, typer.Argument(help="The plugin's name: lowercase letters and digits (e.g. notes: "
                                                  "namespace NOTES).", show_default=False)],
         directory: Annotated[Path | None, typer.Argument(help="Where to write it (default: ./svc-plugin-NAME).",
                                                          show_default=False)] = None,
         force: Annotated[bool, typer.Option("--force", help="Write into a directory that is not empty.")] = False,
         ) -> None:
    """Scaffold a plugin distribution that works as it is: a handler, its Pkl schema, a manifest and a test."""
    from svc.plugins.scaffold import ScaffoldError, scaffold

    try:
        plugin, root, written = scaffold(name, directory, force=force)
    except ScaffoldError as error:
        raise CliError(str(error)) from None
    console.print(f"Wrote {plugin.distribution} (namespace {plugin.namespace}, {len(written)} files) to {root}.")
    console.print(f"Next: cd {root} && pip install -e '.[test]' && pytest   (or: svc plugin test {root})")


@plugin_app.command("test")
def test(plugin: Annotated[str, typer.Argument(help="An installed plugin's namespace, or a plugin distribution's "
                                                    "directory.")] = ".",
         types: Annotated[list[str] | None, typer.Option("--types", help="Only these resource types (repeat, or "
                                                                          "separate with commas).")] = None,
         keep: Annotated[Path | None, typer.Option("--keep", help="Run in this directory and keep it (the agent's "
                                                                  "log and database, the formas).")] = None) -> None:
    """Run the conformance kit on an installed plugin: every phase of each resource type its cases cover, through a
    real agent started here; a per-type, per-phase report, and a non-zero exit when a phase fails."""
    from svc.plugins.conformance.command import run
    from svc.plugins.conformance.suite import KitError

    wanted = [name.strip() for value in types or [] for name in value.split(",") if name.strip()]
    try:
        code = run(plugin, wanted, keep)
    except KitError as error:
        raise CliError(str(error)) from None
    raise typer.Exit(code)
