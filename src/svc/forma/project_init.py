"""``svc project init``: a PklProject on the installed packages, and a first forma."""

from __future__ import annotations

from pathlib import Path

from svc.forma.errors import FormaError
from svc.pkl.packages import SVC_DEPENDENCY, LocalPackage, available_packages
from svc.pkl.projects import PklProjectError, resolve_if_stale

MAIN_FORMA = """\
/// A forma: the stacks, targets and resources svc manages. `svc eval main.pkl` shows what `svc apply main.pkl` sends.
extends "@svc/forma.pkl"

import "@svc/svc.pkl"
{plugin_imports}
/// CLI properties: each member is a flag (`svc apply main.pkl --name demo`).
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
{resources}}}
"""

# With the LOCAL plugin installed, the first forma manages a file, so that it applies as written on an agent that
# runs LOCAL (the quick start's); the agent refuses a stack without resources.
LOCAL_RESOURCES = """\
  // A file under the agent's home, through the LOCAL plugin: replace it with your own resources.
  new svc.Target {{
    label = "\\(properties.name)-home"
    config = new lcl.Config {{ root = "~/svc-\\(properties.name)" }}
  }}
  new fs.File {{ label = "readme"; path = "README.txt"; content = "Managed by svc: \\(properties.name)\\n" }}
"""
NO_RESOURCES = "  // Add resources here (svc refuses to apply a stack without any).\n"


PROJECT_FILE = """\
/// The project of these formas. svc supplies `@svc` and the packages of the plugins installed with it
/// ({names}) wherever it runs, so nothing here names a path on this machine: commit this file.
/// Add what else the formas import under `dependencies` (another project by a relative path, a published package).
amends "pkl:Project"
"""


def project_file_text(packages: list[LocalPackage]) -> str:
    return PROJECT_FILE.format(names=", ".join(f"@{p.name}" for p in packages if p.name != SVC_DEPENDENCY) or "none")


def main_forma_text(packages: list[LocalPackage]) -> str:
    names = [p.name for p in packages if p.name != SVC_DEPENDENCY]
    imports = "".join(f'// import "@{name}/…"  (the {name.upper()} plugin\'s resource types)\n'
                      for name in names if name != "local")
    if "local" not in names:
        return MAIN_FORMA.format(plugin_imports=imports, resources=NO_RESOURCES)
    imports = 'import "@local/local.pkl" as lcl  // `local` is a Pkl keyword\nimport "@local/fs.pkl"\n' + imports
    return MAIN_FORMA.format(plugin_imports=imports, resources=LOCAL_RESOURCES.format())


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
