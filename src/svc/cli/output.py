"""Human and machine output. Machine mode prints exactly one JSON or YAML document on stdout."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from svc.model.wire import Wire

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

console = Console()


def emit(data: Data, consumer: Consumer, schema: Schema, human: Callable[[Data], None]) -> None:
    """Prints ``data`` as a machine document (a decoded answer in its wire JSON), or hands it to ``human`` to
    render."""
    if consumer is Consumer.human:
        human(data)
        return
    document = _document(data)
    if schema is Schema.json:
        typer.echo(json.dumps(document, separators=(",", ":"), default=str))
    else:
        import yaml  # only for --output-schema yaml

        typer.echo(yaml.safe_dump(document, indent=2, sort_keys=False, default_flow_style=False).rstrip("\n"))


def _document(data: Any) -> Any:
    if isinstance(data, Wire):
        return data.to_json()
    if isinstance(data, list):
        return [_document(item) for item in data]
    if isinstance(data, dict):
        return {key: _document(value) for key, value in data.items()}
    return data
