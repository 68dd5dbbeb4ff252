"""pip, run on the environment svc itself runs in (``sys.executable -m pip``), and its output summarised.

``svc upgrade`` and the agent's plugin management both install with it: pip is the installer svc's environment
already has, and the one the user knows. The agent runs it as a subprocess of its event loop
(``run_pip_async``), so a long download never blocks the API.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from dataclasses import dataclass

from svc.plugins.installed import normalized_name

_MAX_SUMMARY = 400  # characters of pip's complaint in an error message: enough for its reason, not its log
_NOT_FOUND = re.compile(r"No matching distribution found for (\S+)")


@dataclass(frozen=True)
class PipResult:
    returncode: int
    output: str  # stdout and stderr, in that order

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def summary(self) -> str:
        """What went wrong, in one line: pip's ``ERROR:`` lines (its reasons), else its last line."""
        lines = [line.strip() for line in self.output.splitlines() if line.strip()]
        errors = [line.removeprefix("ERROR:").strip() for line in lines if line.startswith("ERROR:")]
        text = "; ".join(errors) if errors else (lines[-1] if lines else "no output")
        return text if len(text) <= _MAX_SUMMARY else text[:_MAX_SUMMARY - 1] + "…"

    def missing(self) -> str | None:
        """The requirement no source had (``name==version``), when that is why pip failed."""
        found = _NOT_FOUND.search(self.output)
        return found.group(1) if found else None


def pip_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "pip", *arguments, "--disable-pip-version-check"]


def run_pip(arguments: list[str], environment: dict[str, str]) -> PipResult:
    result = subprocess.run(pip_command(*arguments), capture_output=True, text=True, env=environment)
    return PipResult(result.returncode, result.stdout + result.stderr)


async def run_pip_async(arguments: list[str], environment: dict[str, str]) -> PipResult:
    """``run_pip`` without blocking the event loop; a cancelled caller does not leave pip half-way: pip is let
    finish (it replaces files one distribution at a time), and the cancel goes on once it has."""
    process = await asyncio.create_subprocess_exec(*pip_command(*arguments), env=environment,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    communicating = asyncio.ensure_future(process.communicate())
    try:
        stdout, stderr = await asyncio.shield(communicating)
    except asyncio.CancelledError:
        await communicating
        raise
    return PipResult(process.returncode or 0, stdout.decode(errors="replace") + stderr.decode(errors="replace"))


_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def outside_requirements(requires: dict[str, list[str]]) -> list[str]:
    """The requirements of the distributions ``requires`` (name → its ``Requires-Dist``) on anything but each
    other: what a second pip run installs from pip's usual configuration, after the first installed ours alone
    (``--no-deps``) from our own source."""
    ours = {normalized_name(name) for name in requires}
    found: list[str] = []
    for listed in requires.values():
        for requirement in listed:
            name = _REQUIREMENT_NAME.match(requirement)
            if name and normalized_name(name.group(0)) not in ours and requirement not in found:
                found.append(requirement)
    return found
