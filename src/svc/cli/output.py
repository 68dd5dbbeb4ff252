"""Human and machine output. Machine mode prints exactly one JSON or YAML document on stdout.

Human output goes through ``console``, Rich's console made on first use: importing Rich and making its console
cost a short command about a tenth of its CPU, and a command that only says one line (``svc plan`` with no changes,
a no-op ``svc apply``) into a pipe or a file has no use for it. Such a line, one Rich would print as it is, is
written directly; anything else (a terminal, colours, markup, emoji codes, a line to wrap, a table) is Rich's.
"""

from __future__ import annotations

import builtins
import enum
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from svc.jsontext import dump_bytes
from svc.model.wire import Wire

if TYPE_CHECKING:
    from rich.console import Console

Data = TypeVar("Data")


class Consumer(enum.StrEnum):
    human = "human"
    machine = "machine"


class Schema(enum.StrEnum):
    json = "json"
    yaml = "yaml"


ConsumerOption = Annotated[
    Consumer, typer.Option("--output-consumer", help="human: formatted for people; machine: one document on stdout.")
]
SchemaOption = Annotated[Schema, typer.Option("--output-schema", help="The document format in machine mode.")]


class LazyConsole:
    """Rich's ``Console()``, made when first needed; until then ``print`` writes a plain line itself when Rich
    would print exactly that line (``plain_line``). Every other attribute is the Rich console's."""

    def __init__(self) -> None:
        object.__setattr__(self, "_rich", None)

    @property
    def rich(self) -> Console:
        if self._rich is None:
            from rich.console import Console

            object.__setattr__(self, "_rich", Console())
        return self._rich

    def print(self, *objects: Any, **options: Any) -> None:
        # Once Rich's console exists it prints everything: its capture and recording see all.
        line = plain_line(objects, options) if self._rich is None else None
        if line is None:
            self.rich.print(*objects, **options)
        else:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    @property
    def is_terminal(self) -> bool:
        """Rich's ``Console.is_terminal``, told without making the console."""
        return self._rich.is_terminal if self._rich is not None else _rich_sees_a_terminal()

    def styled(self, text: str, style: str, **options: Any) -> None:
        """``text`` in a Rich ``style``: off a terminal, where Rich writes no colour, the text as it is."""
        line = plain_line((text,), {**options, "markup": False, "emoji": False}) if self._rich is None else None
        if line is None:
            from rich.text import Text

            self.rich.print(Text(text, style=style), **options)
        else:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.rich, name, value)


_PLAIN_OPTIONS = frozenset({"highlight", "markup", "soft_wrap", "emoji"})


def plain_line(objects: tuple[Any, ...], options: dict[str, Any]) -> str | None:
    """The text ``Console().print(*objects, **options)`` would write, when it is the one string as it is (no
    terminal, nothing Rich interprets or wraps): a line, or lines apart by newlines; else None, and Rich prints
    it."""
    if len(objects) != 1 or not isinstance(objects[0], str) or not _PLAIN_OPTIONS.issuperset(options):
        return None
    text: str = objects[0]
    if options.get("markup", True) and "[" in text:
        return None
    if not text.isascii() and not options.get("soft_wrap"):  # wide characters: Rich measures them to wrap
        return None
    if options.get("emoji", True) and text.count(":") > 1:  # a possible :emoji: code
        return None
    width = None if options.get("soft_wrap") else _rich_width()
    for line in text.split("\n"):
        if not line.isprintable():
            return None  # control codes: Rich's to handle
        if width is not None and len(line) > width:
            return None  # Rich wraps it
    if _rich_sees_a_terminal():
        return None
    return text


def _rich_sees_a_terminal() -> bool:
    """Rich's ``Console.is_terminal`` for stdout (Jupyter, Windows' legacy console: treated as a terminal)."""
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return True
    compatible = os.getenv("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    if (force := os.getenv("FORCE_COLOR")) is not None:
        return force != ""
    try:
        return sys.stdout.isatty()
    except ValueError:  # closed
        return False


def _rich_width() -> int:
    """Rich's ``Console.width`` when stdout is no terminal: ``$COLUMNS``, else the first of stdin, stdout and
    stderr that is a terminal, else 80."""
    columns = os.getenv("COLUMNS", "")
    if columns.isdigit():
        return int(columns)
    for descriptor in (0, 1, 2):
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


console = LazyConsole()


def emit(data: Data, consumer: Consumer, schema: Schema, human: Callable[[Data], None]) -> None:
    """Prints ``data`` as a machine document (a decoded answer in its wire JSON), or hands it to ``human`` to
    render."""
    if consumer is Consumer.human:
        human(data)
        return
    if schema is Schema.json:
        # The encoder asks for each wire shape it meets: copying the whole document first to replace them took
        # longer than encoding it (2.3 s of the 5 s a 100,000-resource forma's `svc eval` spent printing).
        typer.echo(dump_bytes(data, ascii_only=True, default=_json_default).decode())
    else:
        typer.echo(yaml_text(_document(data)))


def yaml_text(document: Any) -> str:
    """``document`` (plain JSON values) as block YAML, keys in their order. libyaml's emitter where PyYAML has it
    (its wheels do): the same text as the pure-Python one, three times faster (0.38 s → 0.13 s for the forma of 40
    AWS types)."""
    import yaml  # only for --output-schema yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(document, Dumper=dumper, indent=2, sort_keys=False, default_flow_style=False).rstrip("\n")


def _json_default(value: Any) -> Any:
    return value.to_json() if isinstance(value, Wire) else str(value)


def _document(data: Any) -> Any:
    if isinstance(data, Wire):
        return data.to_json()
    if isinstance(data, list):
        return [_document(item) for item in data]
    if isinstance(data, dict):
        return {key: _document(value) for key, value in data.items()}
    return data
