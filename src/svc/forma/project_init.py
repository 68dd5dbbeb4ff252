"""``svc project init``: a PklProject on the installed packages, and a first forma."""

from __future__ import annotations

import json
from pathlib import Path

from svc.forma.errors import FormaError
from svc.pkl.packages import SVC_DEPENDENCY, LocalPackage, available_packages
from svc.pkl.projects import PklProjectError, resolve_if_stale

MAIN_FORMA = """\
/// A forma: the stacks, targets and resources svc manages. Evaluate it with `svc eval main.pkl`.
extends "@svc/forma.pkl"

import "@svc/svc.pkl"
{plugin_imports}
/// CLI properties: each member is a flag (`svc eval main.pkl --name demo`).
properties: Props

class Props {{
  /// The name of this deployment.
  name: String = "my-name"
}}

forma {{
  new svc.Stack {{
    label = "\\(properties.name)-stack"
    description = "Stack for my resources"
  }}
}}
"""


def project_file_text(packages: list[LocalPackage]) -> str:
    lines = [
        "/// The packages this project's formas import, all local (installed with svc and its plugins).",
        'amends "pkl:Project"',
        "",
        "dependencies {",
        *(f"  [{json.dumps(p.name)}] = import({json.dumps(str(p.project_file))})" for p in packages),
        "}",
        "",
    ]
    return "\n".join(lines)


def main_forma_text(packages: list[LocalPackage]) -> str:
    imports = "".join(f'// import "@{p.name}/…"  (the {p.name.upper()} plugin\'s resource types)\n'
                      for p in packages if p.name != SVC_DEPENDENCY)
    return MAIN_FORMA.format(plugin_imports=imports)


def init_project(directory: Path, *, overwrite: bool = False) -> list[Path]:
    """Writes ``PklProject`` and ``main.pkl`` into ``directory`` and resolves the project."""
    packages = available_packages()
    files = {directory / "PklProject": project_file_text(packages), directory / "main.pkl": main_forma_text(packages)}
    existing = [path for path in files if path.exists()]
    if existing and not overwrite:
        names = ", ".join(str(path) for path in existing)
        raise FormaError(f"{names} already exists; pass --yes to overwrite")
    directory.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    try:
        resolve_if_stale(directory / "PklProject")
    except PklProjectError as exc:
        raise FormaError(str(exc)) from exc
    return [*files, directory / "PklProject.deps.json"]
