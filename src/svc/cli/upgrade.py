"""``svc upgrade --version V``: install svc V, and the plugins released with it, from svc's own source.

Two pip runs: the first installs our distributions without their dependencies from svc's source alone
(:mod:`svc.plugins.package_source`), the second installs whatever dependencies they declare from pip's usual
configuration, naming none of ours, so no other source can answer for a name of ours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import entry_points
from importlib.metadata import version as installed_dist_version
from pathlib import Path
from typing import Annotated

import typer

from svc.cli.common import ConfigOption
from svc.cli.errors import CliError
from svc.cli.package_options import FindLinksOption, IndexUrlOption, named_source
from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP, normalized_name
from svc.plugins.package_source import (
    PackageSource,
    PackageSourceError,
    installed_from,
    record,
    recorded_source,
)
from svc.plugins.pip_runs import PipResult, outside_requirements, run_pip

# Run in a fresh interpreter: what is installed now, not what this process imported before pip ran.
_METADATA_PROBE = ("import importlib.metadata as m, json, sys; "
                   "print(json.dumps({n: [m.version(n), m.requires(n) or []] for n in sys.argv[1:]}))")


def _lockstep_plugins() -> tuple[list[str], list[str]]:
    """Plugin distributions released with svc (at its installed version), and those versioned on their own."""
    current = installed_dist_version("svc")
    lockstep: dict[str, None] = {}  # dicts: one namespace per entry point, several per distribution
    independent: dict[str, None] = {}
    for entry in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        dist = entry.dist
        if dist is None or normalized_name(dist.name) == "svc":
            continue
        if dist.version == current:
            lockstep[dist.name] = None
        else:
            independent[f"{dist.name} {dist.version}"] = None
    return list(lockstep), list(independent)


def _source(index_url: str | None, find_links: list[str] | None, config: Path | None) -> PackageSource:
    named = named_source(index_url, find_links, config)
    if named is not None:
        return named
    try:
        found = recorded_source() or installed_from()
    except PackageSourceError as error:
        raise CliError(str(error)) from error
    if found is None:
        raise CliError(f"svc {installed_dist_version('svc')} was installed by name from a package index, and pip "
                       "records no index; the public one has an unrelated project named svc. Name svc's own: "
                       "--index-url URL or --find-links DIR (remembered for later upgrades), or cli.upgrade.indexUrl "
                       "/ cli.upgrade.findLinks in the CLI config")
    return found


def _pip(arguments: list[str], environment: dict[str, str]) -> PipResult:
    return run_pip(["install", *arguments], environment)


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _install_ours(requirements: list[str], source: PackageSource) -> None:
    with tempfile.TemporaryDirectory(prefix="svc-upgrade-") as empty_dir:
        result = _pip(["--no-deps", *source.pip_arguments(), *requirements],
                      source.pip_environment(dict(os.environ), Path(empty_dir)))
    if result.ok:
        return
    missing = result.missing()
    if missing:
        raise CliError(f"{missing} was not found in {source.describe()}; check the version, "
                       "or pass --index-url / --find-links where that release is published")
    raise CliError(f"pip could not install {' '.join(requirements)}: {result.summary()}")


def _installed(names: list[str]) -> dict[str, tuple[str, list[str]]]:
    result = subprocess.run([sys.executable, "-c", _METADATA_PROBE, *names], capture_output=True, text=True)
    if result.returncode != 0:
        raise CliError(f"cannot read what pip installed: {_last_line(result.stderr)}")
    return {name: (found[0], found[1]) for name, found in json.loads(result.stdout).items()}


def _install_dependencies(installed: dict[str, tuple[str, list[str]]], version: str) -> None:
    requirements = outside_requirements({name: requires for name, (_, requires) in installed.items()})
    if not requirements:
        return
    result = _pip(requirements, dict(os.environ))
    if not result.ok:
        quoted = " ".join(f"'{requirement}'" for requirement in requirements)
        raise CliError(f"svc {version} is installed, but pip could not install its dependencies: "
                       f"{result.summary()}; run: {sys.executable} -m pip install {quoted}")


def upgrade(
    version: Annotated[str, typer.Option("--version", help="The version to install, e.g. the agent's version.")],
    index_url: IndexUrlOption = None,
    find_links: FindLinksOption = None,
    config: ConfigOption = None,
) -> None:
    """Install svc VERSION, and the plugins released with it, into this environment (the CLI must match the agent).

    From svc's own source: --index-url / --find-links, else cli.upgrade in the CLI config, else where svc came from.

    Never from the public index, which has an unrelated project named svc.
    """
    source = _source(index_url, find_links, config)
    plugins, independent = _lockstep_plugins()
    names = ["svc", *plugins]
    typer.echo(f"Installing {', '.join(f'{name} {version}' for name in names)} from {source.describe()}…", err=True)
    if independent:
        typer.echo(f"Left as they are (not released with svc): {', '.join(independent)}", err=True)
    _install_ours([f"{name}=={version}" for name in names], source)
    installed = _installed(names)
    wrong = [f"{name} {found}" for name, (found, _) in installed.items() if found != version]
    if wrong:
        raise CliError(f"pip finished but {', '.join(wrong)} is installed, not {version}; try: {sys.executable} "
                       f"-m pip install --force-reinstall --no-deps {' '.join(source.pip_arguments())} svc=={version}")
    try:
        problem = record(source)
    except PackageSourceError as error:
        problem = str(error)
    if problem:
        typer.echo(f"Warning: cannot remember where svc came from ({problem}); pass the source again next time.",
                   err=True)
    _install_dependencies(installed, version)
    typer.echo(f"svc {version} is installed." + (f" Plugins: {', '.join(plugins)} {version}." if plugins else ""))
