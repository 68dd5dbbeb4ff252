"""An isolated world for the AWS plugin's end-to-end tests: a moto server, dummy credentials for the
standard chain, and a home of its own (config, data, journal), none of the developer's AWS setup."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.aws import aws_environment
from support.moto import moto_server


@contextmanager
def aws_world(directory: Path) -> Iterator[str]:
    """Sets the environment up under ``directory`` (agents started inside inherit it); yields moto's URL."""
    home = directory / "home"
    home.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**aws_environment(directory), "HOME": str(home),
                            "XDG_CONFIG_HOME": str(home / ".config"),
                            "XDG_DATA_HOME": str(home / ".local" / "share"),
                            "SVC_PID_FILE": str(directory / "agent.pid")}.items():
            patch.setenv(name, value)
        for name in ("AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_SESSION_TOKEN"):
            patch.delenv(name, raising=False)
        with moto_server(directory / "moto.log") as url:
            yield url
