"""``svc upgrade --version V``: install svc V, and the plugins released with it, from svc's own source.

Two pip runs: the first installs our distributions without their dependencies from svc's source alone
(:mod:`svc.cli.upgrade_source`), the second installs whatever dependencies they declare from pip's usual
configuration, naming none of ours, so no other source can answer for a name of ours.
"""

from __future__ import annotations

import json
import os
import re
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
from svc.cli.upgrade_source import UpgradeSource, from_options, installed_from, record, recorded_source
from svc.config import default_cli_config_path, load_config
from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP

# Run in a fresh interpreter: what is installed now, not what this process imported before pip ran.
_METADATA_PROBE = ("import importlib.metadata as m, json, sys; "
                   "print(json.dumps({n: [m.version(n), m.requires(n) or []] for n in sys.argv[1:]}))")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lockstep_plugins() -> tuple[list[str], list[str]]:
    """Plugin distributions released with svc (at its installed version), and those versioned on their own."""
    current = installed_dist_version("svc")
    lockstep: dict[str, None] = {}  # dicts: one namespace per entry point, several per distribution
    independent: dict[str, None] = {}
    for entry in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        dist = entry.dist
        if dist is None or _normalized(dist.name) == "svc":
            continue
        if dist.version == current:
            lockstep[dist.name] = None
        else:
            independent[f"{dist.name} {dist.version}"] = None
    return list(lockstep), list(independent)


def _source(index_url: str | None, find_links: list[str] | None, config: Path | None) -> UpgradeSource:
    explicit = from_options(index_url, find_links, "given on the command line")
    if explicit is not None:
        return explicit
    path = config or default_cli_config_path()
    if config is not None or path.is_file():
        settings = load_config(path).cli.upgrade
        configured = from_options(settings.index_url, list(settings.find_links), f"cli.upgrade in {path}")
        if configured is not None:
            return configured
    found = recorded_source() or installed_from()
    if found is None:
        raise CliError(f"svc {installed_dist_version('svc')} was installed by name from a package index, and pip "
                       "records no index; the public one has an unrelated project named svc. Name svc's own: "
                       "--index-url URL or --find-links DIR (remembered for later upgrades), or cli.upgrade.indexUrl "
                       "/ cli.upgrade.findLinks in the CLI config")
    return found


def _pip(arguments: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *arguments]
    return subprocess.run(command, capture_output=True, text=True, env=environment)


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _install_ours(requirements: list[str], source: UpgradeSource) -> None:
    with tempfile.TemporaryDirectory(prefix="svc-upgrade-") as empty_dir:
        result = _pip(["--no-deps", *source.pip_arguments(), *requirements],
                      source.pip_environment(dict(os.environ), Path(empty_dir)))
    if result.returncode == 0:
        return
    output = result.stdout + result.stderr
    missing = re.search(r"No matching distribution found for (\S+)", output)
    if missing:
        raise CliError(f"{missing.group(1)} was not found in {source.describe()}; check the version, "
                       "or pass --index-url / --find-links where that release is published")
    raise CliError(f"pip could not install {' '.join(requirements)}: {_last_line(output)}")


def _installed(names: list[str]) -> dict[str, tuple[str, list[str]]]:
    result = subprocess.run([sys.executable, "-c", _METADATA_PROBE, *names], capture_output=True, text=True)
    if result.returncode != 0:
        raise CliError(f"cannot read what pip installed: {_last_line(result.stderr)}")
    return {name: (found[0], found[1]) for name, found in json.loads(result.stdout).items()}


def _install_dependencies(installed: dict[str, tuple[str, list[str]]], version: str) -> None:
    ours = {_normalized(name) for name in installed}
    requirements: list[str] = []
    for _, requires in installed.values():
        for requirement in requires:
            name = _NAME.match(requirement)
            if name and _normalized(name.group(0)) not in ours and requirement not in requirements:
                requirements.append(requirement)
    if not requirements:
        return
    result = _pip(requirements, dict(os.environ))
    if result.returncode != 0:
        quoted = " ".join(f"'{requirement}'" for requirement in requirements)
        raise CliError(f"svc {version} is installed, but pip could not install its dependencies: "
                       f"{_last_line(result.stdout + result.stderr)}; run: {sys.executable} -m pip install {quoted}")


def upgrade(
    version: Annotated[str, typer.Option("--version", help="The version to install, e.g. the agent's version.")],
    index_url: Annotated[str | None, typer.Option(
        "--index-url", help="The package index serving svc's releases (remembered for later upgrades).")] = None,
    find_links: Annotated[list[str] | None, typer.Option(
        "--find-links", help="A directory or page of svc's wheels; without --index-url, the only source.")] = None,
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
    problem = record(source)
    if problem:
        typer.echo(f"Warning: cannot remember where svc came from ({problem}); pass the source again next time.",
                   err=True)
    _install_dependencies(installed, version)
    typer.echo(f"svc {version} is installed." + (f" Plugins: {', '.join(plugins)} {version}." if plugins else ""))
