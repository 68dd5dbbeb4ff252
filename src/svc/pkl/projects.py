"""Which packages a module can import: its ``PklProject`` if it has one, else svc's own set.

With a ``PklProject`` (found in the module's directory or above), that project is used as Pkl
would use it: ``pkl project resolve`` runs first when ``PklProject.deps.json`` is missing or older
than ``PklProject``. Plugin schema packages it depends on locally get ``@svc`` from the project's
own ``svc`` dependency (they do not declare one). Without a ``PklProject``, every installed
package is supplied (:func:`svc.pkl.packages.implicit_environment`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from svc.pkl.binary import find_pkl
from svc.pkl.packages import SVC_DEPENDENCY, PackageEnvironment, implicit_environment
from svc.pkl.readers import bundled_modules
from svc.pkl.server import EvaluationRequest, PklError, shared_server


class PklProjectError(Exception):
    """A PklProject cannot be used; the message names the file and what to do."""


def find_project_file(directory: Path) -> Path | None:
    for candidate in (directory, *directory.parents):
        if (candidate / "PklProject").is_file():
            return candidate / "PklProject"
    return None


def environment_for(module: Path) -> PackageEnvironment:
    """The packages ``module`` can import: its project's, or svc's own set without one."""
    project_file = find_project_file(module.resolve().parent)
    return project_environment(project_file) if project_file is not None else implicit_environment()


def resolve_if_stale(project_file: Path) -> None:
    """Runs ``pkl project resolve`` when the deps file is missing or older than the project."""
    deps = project_file.with_name("PklProject.deps.json")
    if deps.is_file() and deps.stat().st_mtime >= project_file.stat().st_mtime:
        return
    result = subprocess.run([str(find_pkl()), "project", "resolve", str(project_file.parent)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).replace("–– Pkl Error ––", "").strip()
        raise PklProjectError(f"cannot resolve the dependencies of {project_file}:\n{detail}")


def describe_project(project_file: Path) -> dict[str, Any]:
    """The project's declared dependencies, as the ``project`` of an evaluator."""
    text = (
        'import "svc:/internal/describe-project.pkl" as d\n'
        f"import {json.dumps(project_file.resolve().as_uri())} as p\n"
        "output { value = d.describe(p); renderer = new JsonRenderer {} }\n"
    )
    request = EvaluationRequest(module_uri="file:///svc-describe-project.pkl", module_text=text,
                                readers=[bundled_modules()])
    try:
        return json.loads(shared_server().evaluate(request))
    except PklError as exc:
        raise PklProjectError(f"invalid {project_file}:\n{exc}") from exc


def _with_svc(dependencies: dict[str, Any], svc: dict[str, Any]) -> None:
    for name, dependency in dependencies.items():
        if dependency.get("type") == "local" and name != SVC_DEPENDENCY:
            dependency["dependencies"].setdefault(SVC_DEPENDENCY, svc)
            _with_svc(dependency["dependencies"], svc)


def project_environment(project_file: Path) -> PackageEnvironment:
    resolve_if_stale(project_file)
    project = describe_project(project_file)
    svc = project["dependencies"].get(SVC_DEPENDENCY)
    if svc is not None:
        _with_svc(project["dependencies"], svc)
    return PackageEnvironment(project)
