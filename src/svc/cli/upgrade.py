"""``svc upgrade --version V``: install the CLI version that matches the agent."""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated

import typer

from svc.cli.errors import CliError


def installed_version() -> str:
    """The svc version a fresh interpreter of this environment imports (not this process's)."""
    probe = "import importlib.metadata as m; print(m.version('svc'))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if result.returncode != 0:
        raise CliError(f"cannot read the installed svc version: {result.stderr.strip().splitlines()[-1:]}")
    return result.stdout.strip()


def _pip_failure(output: str, version: str) -> str:
    if "No matching distribution found" in output or "Could not find a version" in output:
        return (f"svc {version} was not found in the package index; check the version, "
                "or pass --index-url / --find-links where that release is published")
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return f"pip could not install svc {version}: {lines[-1] if lines else 'no output'}"


def upgrade(
    version: Annotated[str, typer.Option("--version", help="The version to install, e.g. the agent's version.")],
    index_url: Annotated[str | None, typer.Option("--index-url", help="Passed to pip.")] = None,
    extra_index_url: Annotated[str | None, typer.Option("--extra-index-url", help="Passed to pip.")] = None,
    find_links: Annotated[list[str] | None, typer.Option("--find-links", help="Passed to pip.")] = None,
) -> None:
    """Install svc VERSION into this environment with pip (the CLI must match the agent exactly)."""
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", f"svc=={version}"]
    if index_url:
        command += ["--index-url", index_url]
    if extra_index_url:
        command += ["--extra-index-url", extra_index_url]
    for link in find_links or []:
        command += ["--find-links", link]
    typer.echo(f"Installing svc {version} with pip…", err=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CliError(_pip_failure(result.stdout + result.stderr, version))
    installed = installed_version()
    if installed != version:
        raise CliError(f"pip finished but svc {installed} is installed, not {version}; "
                       f"try: {sys.executable} -m pip install --force-reinstall svc=={version}")
    typer.echo(f"svc {version} is installed.")
