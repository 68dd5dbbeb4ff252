"""``svc eval`` and ``svc project init``."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import click
import typer
import yaml

from svc.cli.errors import CliError
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, emit
from svc.forma import FormaError, Property, evaluate_forma, forma_properties
from svc.forma.project_init import init_project

project_app = typer.Typer(help="Create and manage Pkl projects of formas.", no_args_is_help=True)

# Unknown options are the forma's property flags, parsed once the forma has declared them.
PROPERTY_FLAGS = {"allow_extra_args": True, "ignore_unknown_options": True}

_CLICK_TYPES: dict[str, click.ParamType] = {"String": click.STRING, "Int": click.INT, "Float": click.FLOAT}


class Mode(enum.StrEnum):
    reconcile = "reconcile"
    patch = "patch"


def _option(name: str, prop: Property) -> click.Option:
    # A default of None would count as a value: pass a default only when the forma has one.
    settings: dict[str, Any] = {"required": prop.required, "help": prop.description}
    if prop.default is not None:
        settings["default"] = prop.default
    if prop.type == "Boolean":
        return click.Option([name, f"--{prop.flag}/--no-{prop.flag}"], **settings)
    return click.Option([name, f"--{prop.flag}"], type=_CLICK_TYPES[prop.type], **settings)


def parse_property_flags(properties: Mapping[str, Property], args: Sequence[str]) -> dict[str, str]:
    """The values of the forma's property flags in ``args``, as the strings Pkl reads (``prop:``)."""
    options = {f"p{index}": prop for index, prop in enumerate(properties.values())}
    command = click.Command("properties", params=[_option(name, prop) for name, prop in options.items()])
    try:
        with command.make_context("svc", list(args)) as ctx:
            values = ctx.params
    except click.ClickException as exc:
        raise CliError(exc.format_message()) from exc
    return {
        prop.flag: (str(value).lower() if isinstance(value, bool) else str(value))
        for name, prop in options.items()
        if (value := values.get(name)) is not None
    }


def evaluate_with_flags(file: Path, args: Sequence[str], *, command: str, mode: str) -> Any:
    """Evaluates a forma with its property flags taken from ``args`` (what apply and destroy use too)."""
    try:
        flags = parse_property_flags(forma_properties(file), args)
        return evaluate_forma(file, command=command, mode=mode, flags=flags)
    except FormaError as exc:
        raise CliError(str(exc)) from exc


def _human(schema: Schema) -> Any:
    def render(document: dict[str, Any]) -> None:
        if schema is Schema.yaml:
            typer.echo(yaml.safe_dump(document, indent=2, sort_keys=False, allow_unicode=False).rstrip("\n"))
        else:
            typer.echo(json.dumps(document, indent=2))

    return render


def eval_command(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The forma (a .pkl file amending @svc/forma.pkl).", dir_okay=False)],
    mode: Annotated[Mode, typer.Option("--mode", help="The apply mode the forma sees ($mode).")] = Mode.reconcile,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Evaluate a forma and print the forma JSON that apply would send; the forma's properties are flags."""
    forma = evaluate_with_flags(file, ctx.args, command="eval", mode=mode.value)
    emit(forma.to_json(), output_consumer, output_schema, _human(output_schema))


@project_app.command("init")
def project_init(
    directory: Annotated[Path, typer.Argument(help="Where to create the project.", file_okay=False)] = Path("."),
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Overwrite existing files.")] = False,
) -> None:
    """Write a PklProject (local dependencies on svc and the installed plugins) and a main.pkl."""
    try:
        written = init_project(directory, overwrite=yes)
    except FormaError as exc:
        raise CliError(str(exc)) from exc
    for path in written:
        typer.echo(f"wrote {path}")
