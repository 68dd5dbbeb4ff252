"""``svc extract --query Q FILE``: the agent's resources written as a Pkl forma.

The resources (with their stacks and targets) come from ``GET /api/v1/resources``; the Pkl is generated
offline against the installed plugins' schema packages (:mod:`svc.forma.extract`). The file is then
evaluated as ``svc eval`` would, so a file that cannot be applied is never reported as a success.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from svc.cli import agent_api
from svc.cli.client import connect
from svc.cli.common import ConfigOption
from svc.cli.errors import CliError
from svc.cli.output import Consumer, ConsumerOption, Schema, SchemaOption, emit
from svc.config import cli_config
from svc.forma import FormaError, evaluate_forma
from svc.forma.extract import DEFAULT_UNMANAGED_STACK, Extraction, ExtractOptions, generate, namespaces, resource_types
from svc.forma.extract_catalog import ExtractError, load_catalog
from svc.paths import replace_file


def extract_command(
    file: Annotated[Path, typer.Argument(help="The forma to write (.pkl is added when missing).", dir_okay=False)],
    query: Annotated[str, typer.Option("--query", help="Which resources, e.g. 'stack:prod' or 'managed:false' "
                                                       "(the inventory's query language).")],
    unmanaged_stack: Annotated[str, typer.Option(
        "--unmanaged-stack", help="The stack that resources discovered outside svc are written into; "
                                  "applying the file adopts them there.")] = DEFAULT_UNMANAGED_STACK,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Overwrite FILE if it exists.")] = False,
    config: ConfigOption = None,
    output_consumer: ConsumerOption = Consumer.human,
    output_schema: SchemaOption = Schema.json,
) -> None:
    """Write the resources matching a query as a forma that applies with no changes."""
    if not query.strip():
        raise CliError("--query must not be blank: say which resources to extract, e.g. --query 'stack:prod'")
    if not unmanaged_stack.strip() or unmanaged_stack.startswith("$"):
        raise CliError("--unmanaged-stack must be a stack label, e.g. --unmanaged-stack adopted")
    path = file if file.suffix == ".pkl" else file.with_name(file.name + ".pkl")
    if path.exists() and not yes:
        raise CliError(f"{path} already exists; pass --yes to overwrite it")
    if path.is_dir():
        raise CliError(f"{path} is a directory; name the file to write")

    client = connect(cli_config(config))
    with client:
        forma = agent_api.inventory_forma(client, query.strip())
    nothing = CliError(f"no resources match the query {query.strip()!r}; nothing written")
    if forma is None:
        raise nothing
    try:
        extraction = generate(forma, load_catalog(namespaces(forma), resource_types(forma)),
                              ExtractOptions(query=query.strip(), unmanaged_stack=unmanaged_stack))
    except (ExtractError, ValueError) as exc:
        raise CliError(f"cannot extract: {exc}") from exc
    if not (extraction.resources or extraction.excluded):
        raise nothing
    if not extraction.resources:
        types = ", ".join(extraction.excluded_types())
        raise CliError(f"every resource matching the query is of a type that cannot be extracted ({types}); "
                       "nothing written")
    _write(path, extraction.text)
    _check(path)
    emit(_summary(path, extraction), output_consumer, output_schema, lambda data: _report(path, extraction))


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text)  # never half a file where the user's was
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _check(path: Path) -> None:
    """The written file evaluates as ``svc eval`` would (offline), or the extract failed."""
    try:
        evaluate_forma(path)
    except FormaError as exc:
        raise CliError(f"wrote {path}, but it does not evaluate (if it is inside a Pkl project, check that project's "
                       f"dependencies): {exc}") from exc


def _summary(path: Path, extraction: Extraction) -> dict[str, Any]:
    return {"File": str(path), "Count": len(extraction.resources), "Resources": extraction.resources,
            "Excluded": extraction.excluded, "HashedSecrets": extraction.hashed_secrets,
            "WriteOnly": extraction.write_only}


def _report(path: Path, extraction: Extraction) -> None:
    typer.echo(f"Extracted {len(extraction.resources)} resource(s) to '{path}'")  # one line, however long
    notes: list[str] = []
    if extraction.excluded:
        left = ", ".join(extraction.excluded_names())
        notes.append(f"Left out {len(extraction.excluded)} resource(s) whose type cannot be extracted: {left}")
    if extraction.hashed_secrets:
        notes.append(f"{len(extraction.hashed_secrets)} secret(s) are known only by their hash and were written as "
                     f"svc.hashedSecret(…) ({', '.join(extraction.hashed_secrets)}): applying keeps them; "
                     "supply the plaintext to set or change them")
    if extraction.write_only:
        notes.append(f"Write-only properties are never read back and were not extracted: "
                     f"{', '.join(extraction.write_only)}")
    for note in notes:
        typer.echo(note, err=True)
