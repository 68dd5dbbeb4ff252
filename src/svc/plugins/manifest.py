"""Reading an installed plugin's ``manifest.pkl`` (its identity, runtime and static limits)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from svc.pkl import EvaluationRequest, PklError, shared_server
from svc.pkl.packages import implicit_environment, svc_package
from svc.plugins.installed import InstalledPlugin


class ManifestError(Exception):
    """The manifest is missing or does not evaluate. ``str()`` is one line that says why and where (listings and
    refusals show one line); ``detail`` keeps Pkl's whole message."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message


def read_manifest(plugin: InstalledPlugin) -> dict[str, Any]:
    path = plugin.package_dir / "manifest.pkl"
    if not path.is_file():
        raise ManifestError(f"plugin {plugin.namespace} has no manifest.pkl in {plugin.package_dir}")
    environment = implicit_environment([svc_package()])
    try:
        text = shared_server().evaluate(EvaluationRequest(module_uri=path.as_uri(), readers=environment.readers,
                                                          project=environment.project))
    except PklError as error:
        raise ManifestError(f"the manifest of plugin {plugin.namespace} is invalid: {_reason(error, path)}",
                            str(error)) from error
    return json.loads(text)


def _reason(error: PklError, path: Path) -> str:
    """Pkl's headline, then the manifest's line and member it points at. Pkl's message is blocks of
    ``N | code``, a caret line and ``at module#member (uri)``; the block naming the manifest is the author's line
    (the others are svc's own schema)."""
    for block in str(error).split("\n\n"):
        lines = block.splitlines()
        if len(lines) >= 2 and lines[-1].startswith("at ") and lines[-1].endswith(f"({path.as_uri()})"):
            number = lines[0].split("|", 1)[0].strip()
            member = lines[-1][3:].split(" (", 1)[0].partition("#")[2]
            return f"{error.headline} ({path}:{number}{f', {member}' if member else ''})"
    return f"{error.headline} ({path})"
