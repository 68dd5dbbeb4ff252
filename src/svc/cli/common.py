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
