"""Reading an installed plugin's ``manifest.pkl`` (its identity, runtime and static limits)."""

from __future__ import annotations

import json
from typing import Any

from svc.pkl import EvaluationRequest, PklError, shared_server
from svc.pkl.packages import implicit_environment, svc_package
from svc.plugins.installed import InstalledPlugin


class ManifestError(Exception):
    """The manifest is missing or does not evaluate."""


def read_manifest(plugin: InstalledPlugin) -> dict[str, Any]:
    path = plugin.package_dir / "manifest.pkl"
    if not path.is_file():
        raise ManifestError(f"plugin {plugin.namespace} has no manifest.pkl in {plugin.package_dir}")
    environment = implicit_environment([svc_package()])
    try:
        text = shared_server().evaluate(EvaluationRequest(module_uri=path.as_uri(), readers=environment.readers,
                                                          project=environment.project))
    except PklError as error:
        raise ManifestError(f"the manifest of plugin {plugin.namespace} is invalid:\n{error}") from error
    return json.loads(text)
