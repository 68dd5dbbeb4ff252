"""The package-source options of ``svc upgrade`` and ``svc plugin install|update|search``: one way to name where
svc's distributions come from (``svc.plugins.package_source``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from svc.config import default_cli_config_path, load_config
from svc.plugins.package_source import PackageSource, from_options

IndexUrlOption = Annotated[str | None, typer.Option(
    "--index-url", help="The package index serving svc's releases and plugins (PEP 503 simple URL).")]
FindLinksOption = Annotated[list[str] | None, typer.Option(
    "--find-links", help="A directory or page of svc's wheels; without --index-url, the only source.")]


def named_source(index_url: str | None, find_links: list[str] | None, config: Path | None) -> PackageSource | None:
    """The source the command line names, else ``cli.upgrade`` of the CLI config; None when neither does."""
    explicit = from_options(index_url, find_links, "given on the command line")
    if explicit is not None:
        return explicit
    path = config or default_cli_config_path()
    if config is not None or path.is_file():
        settings = load_config(path).cli.upgrade
        return from_options(settings.index_url, list(settings.find_links), f"cli.upgrade in {path}")
    return None
