"""``svc eval`` and ``svc project init``."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from svc.cli.errors import CliError
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, emit, yaml_text
from svc.cli.waiting import waiting_line
from svc.forma import FormaError, RenderedForma, forma_properties
from svc.forma.arguments import evaluate_with_arguments
from svc.forma.project_init import init_project
from svc.jsontext import dump_bytes
from svc.model.forma_document import Property

if TYPE_CHECKING:
    import click

project_app = typer.Typer(help="Create and manage Pkl projects of formas.", no_args_is_help=True)

# Unknown options are the forma's property flags, parsed once the forma has declared them.
PROPERTY_FLAGS = {"allow_extra_args": True, "ignore_unknown_options": True}

# Every command takes --config; eval evaluates offline, with the plugins installed in this Python
# environment, so it only checks that the file exists.
EvalConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="Config file, as for the other commands; eval reads nothing from it "
                                  "(plugins come from the Python environment).", dir_okay=False, exists=True),
]


class Mode(enum.StrEnum):
    reconcile = "reconcile"
    patch = "patch"


def _option(name: str, prop: Property) -> click.Option:
    import click

    # A default of None would count as a value: pass a default only when the forma has one.
    settings: dict[str, Any] = {"required": prop.required, "help": prop.description}
    if prop.default is not None:
        settings["default"] = prop.default
    if prop.type == "Boolean":
        return click.Option([name, f"--{prop.flag}/--no-{prop.flag}"], **settings)
    types = {"String": click.STRING, "Int": click.INT, "Float": click.FLOAT}
    return click.Option([name, f"--{prop.flag}"], type=types[prop.type], **settings)


def parse_property_flags(properties: Mapping[str, Property], args: Sequence[str]) -> dict[str, str]:
    """The values of the property flags ``args`` give, as the strings Pkl reads (``prop:``). A flag left out is
    not passed: its default is the forma's own (``Prop.value``, a typed property's default)."""
    if not properties and not args:
        return {}  # nothing to parse: the parser (click, a second copy beside Typer's) is not even imported
    import click

    options = {f"p{index}": prop for index, prop in enumerate(properties.values())}
    command = click.Command("properties", params=[_option(name, prop) for name, prop in options.items()])
    try:
        with command.make_context("svc", list(args)) as ctx:
            given = {name: value for name, value in ctx.params.items()
                     if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
    except click.ClickException as exc:
        raise CliError(exc.format_message()) from exc
    return {
        prop.flag: (str(value).lower() if isinstance(value, bool) else str(value))
        for name, prop in options.items()
        if (value := given.get(name)) is not None
    }


def evaluate_with_flags(file: Path, args: Sequence[str], *, command: str, mode: str,
                        meanwhile: Callable[[], object] | None = None) -> RenderedForma:
    """Evaluates a forma with its property flags taken from ``args`` (what apply and destroy use too);
    ``meanwhile``: as for ``render_forma``."""
    try:
        with waiting_line(f"evaluating {file}"):
            return evaluate_with_arguments(file, args, parse_property_flags, command=command, mode=mode,
                                           meanwhile=meanwhile)
    except FormaError as exc:
        raise CliError(str(exc)) from exc


# Where FormaCommand keeps the raw arguments for its help (see parse_args).
_RAW_ARGS = "svc.forma.raw_args"
PROPERTIES_PANEL = "Properties"


def _flags_of(prop: Property) -> str:
    return f"--{prop.flag}/--no-{prop.flag}" if prop.type == "Boolean" else f"--{prop.flag}"


def _shown_default(value: str | bool | int | float) -> str:
    # As the value is written on the command line (and in Pkl): true/false, and "" for empty.
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if value != "" else '""'


def property_help_rows(properties: Mapping[str, Property]) -> list[tuple[bool, str, str, str]]:
    """One row per property flag: whether it is required, its flags, its type and its help with
    the default (or ``[required]``)."""
    rows = []
    for prop in properties.values():
        default = prop.default
        note = "[required]" if default is None else f"[default: {_shown_default(default)}]"
        text = f"{prop.description} {note}" if prop.description else note
        rows.append((prop.required, _flags_of(prop), f"<{prop.type}>", text))
    return rows


class FormaCommand(TyperCommand):
    """A command whose first argument is a forma: its help also lists the forma's properties,
    the flags the forma declares, under a "Properties" heading."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # --help is acted on while the arguments are parsed, before the forma argument has a
        # value: the help finds the forma in the raw arguments.
        ctx.meta[_RAW_ARGS] = list(args)
        return super().parse_args(ctx, args)

    def forma_file(self, ctx: Any) -> Path | None:
        """The forma named on the command line, if any: the first positional ``.pkl`` argument
        (option values such as ``--config x.pkl`` are skipped by the parser)."""
        try:
            values, extra, _ = self.make_parser(ctx).parse_args(args=list(ctx.meta.get(_RAW_ARGS, [])))
        except typer.TyperException:  # a usage error: reported when the command runs without --help
            return None
        arguments = [values.get(p.name) for p in self.get_params(ctx) if p.param_type_name == "argument"]
        return next((Path(arg) for arg in [*arguments, *extra]
                     if isinstance(arg, str) and arg.endswith(".pkl") and not arg.startswith("-")), None)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # Read before anything is printed, so a broken forma gives its error alone.
        rows = self._property_rows(ctx)
        super().format_help(ctx, formatter)
        if not rows:
            return
        if typer.core.HAS_RICH and self.rich_markup_mode is not None:
            _print_properties_panel(rows)
        else:
            with formatter.section(PROPERTIES_PANEL):
                formatter.write_dl([(("* " if required else "") + f"{flags} {kind}", text)
                                    for required, flags, kind, text in rows])

    def _property_rows(self, ctx: Any) -> list[tuple[bool, str, str, str]]:
        file = self.forma_file(ctx)
        if file is None:
            return []
        try:
            return property_help_rows(forma_properties(file))
        except FormaError as exc:
            # Help is no place for Pkl's whole report: its first line names the file, line and cause.
            raise CliError(str(exc).splitlines()[0]) from exc


def _print_properties_panel(rows: list[tuple[bool, str, str, str]]) -> None:
    """The properties as a panel like typer's own option panels, on the console typer prints to."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    table = Table(highlight=True, show_header=False, expand=True, box=None, pad_edge=False, padding=(0, 1))
    for _ in range(3):
        table.add_column(no_wrap=True)
    table.add_column(ratio=1)  # the help takes the room that is left
    for required, flags, kind, text in rows:
        table.add_row(Text(rich_utils.REQUIRED_SHORT_STRING if required else "", style=rich_utils.STYLE_REQUIRED_SHORT),
                      flags, Text(kind, style=rich_utils.STYLE_TYPES), Text(text))  # Text: no markup in "[required]"
    rich_utils._get_rich_console().print(Panel(table, border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER,
                                               title=PROPERTIES_PANEL, title_align=rich_utils.ALIGN_OPTIONS_PANEL))


def _human(schema: Schema) -> Any:
    def render(document: dict[str, Any]) -> None:
        if schema is Schema.yaml:
            typer.echo(yaml_text(document))
        else:
            typer.echo(dump_bytes(document, indent=True, ascii_only=True).decode())

    return render


def eval_command(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The forma (a .pkl file amending @svc/forma.pkl).", dir_okay=False)],
    mode: Annotated[Mode, typer.Option("--mode", help="The apply mode the forma sees ($mode).")] = Mode.reconcile,
    config: EvalConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Evaluate a forma and print the forma JSON that apply would send; the forma's properties are flags."""
    del config  # accepted for the same flags on every command; evaluation needs nothing from it
    forma = evaluate_with_flags(file, ctx.args, command="eval", mode=mode.value)
    from svc.pkl import stop_shared_server  # loaded by the evaluation already

    # Evaluating is over: the pkl server's compiler threads would go on taking a CPU while the forma is printed. It
    # is killed, not waited for: it gives its memory back (~5 ms after 40 AWS types, tens of ms after 1,000
    # resources) while the forma is validated and printed, and is reaped as the command ends.
    stop_shared_server(wait=False)
    try:
        document = forma.validated().to_json()
    except FormaError as exc:
        raise CliError(str(exc)) from exc
    emit(document, output_consumer, output_schema, _human(output_schema))


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
