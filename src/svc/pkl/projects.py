"""Which packages a module can import: its ``PklProject`` if it has one, else svc's own set.

With a ``PklProject`` (found in the module's directory or above), that project is used as Pkl
would use it: ``pkl project resolve`` runs first when ``PklProject.deps.json`` is missing or older
than ``PklProject``. Plugin schema packages it depends on locally get ``@svc`` from the project's
own ``svc`` dependency (they do not declare one). ``@svc`` and the installed plugins' packages that the
project does not declare are supplied as without a project, so a ``PklProject`` names no path into svc's
installation and a team can commit it. Without a ``PklProject``, every installed package is supplied
(:func:`svc.pkl.packages.implicit_environment`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from svc.pkl.binary import find_pkl
from svc.pkl.packages import (
    SVC_DEPENDENCY,
    FileReader,
    PackageEnvironment,
    available_packages,
    implicit_environment,
    resolved_dependencies,
)
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
    declared = project["dependencies"]
    supplied = [p for p in available_packages() if p.name not in declared]
    svc_supplied = next((p for p in supplied if p.name == SVC_DEPENDENCY), None)
    svc = declared.get(SVC_DEPENDENCY) or (svc_supplied.declaration() if svc_supplied else None)
    for package in supplied:
        declared[package.name] = package.declaration(svc_supplied)
    if svc is not None:
        _with_svc(declared, svc)
    if not supplied:
        return PackageEnvironment(project)
    # Pkl resolves dependency notation through the deps file beside the project: serve the resolved one with the
    # supplied packages added (nothing is written next to the user's files).
    deps_file = project_file.resolve().with_name("PklProject.deps.json")
    deps = json.loads(deps_file.read_text(encoding="utf-8"))
    deps.setdefault("resolvedDependencies", {}).update(resolved_dependencies(supplied))
    return PackageEnvironment(project, (FileReader(json.dumps(deps), str(deps_file)),))
