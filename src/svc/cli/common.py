"""Options shared by the commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="Config file (amends svc:/Config.pkl); default ~/.config/svc/svc.conf.pkl.",
                 dir_okay=False),
]


def given_options(ctx: typer.Context, *names: str) -> list[str]:
    """The options among ``names`` (parameter names) that the command line set, as ``--name`` flags."""
    # By name: Typer bundles its own Click, whose ParameterSource is not click's.
    return [f"--{name.replace('_', '-')}" for name in names
            if getattr(ctx.get_parameter_source(name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")]
