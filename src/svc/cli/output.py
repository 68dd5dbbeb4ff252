"""Human and machine output. Machine mode prints exactly one JSON or YAML document on stdout."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console


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

console = Console()


def emit(data: Any, consumer: Consumer, schema: Schema, human: Callable[[Any], None]) -> None:
    """Prints ``data`` as a machine document, or hands it to ``human`` to render."""
    if consumer is Consumer.human:
        human(data)
    elif schema is Schema.json:
        typer.echo(json.dumps(data, separators=(",", ":"), default=str))
    else:
        typer.echo(yaml.safe_dump(data, indent=2, sort_keys=False, default_flow_style=False).rstrip("\n"))
