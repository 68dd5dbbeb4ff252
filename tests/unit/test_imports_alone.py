"""Every ``svc`` module imports alone (DESIGN.md, "Architecture"), and the layers hold.

An import cycle shows only when a module of it is imported first: ``import svc.engine.service`` failed with a
circular ImportError while the agent, entering elsewhere, started fine. So each module is imported as the
first ``svc`` module of an interpreter: one child process imports them in turn, forgetting every ``svc``
module before the next (third-party packages stay loaded, which keeps the whole check to seconds).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import svc

_ROOT = Path(svc.__file__).parent
_CHILDREN = 2  # the modules split between two interpreters that run at once

_CHILD = """
import importlib, json, sys, traceback
failures = {}
for name in json.loads(sys.argv[1]):
    for loaded in [m for m in sys.modules if m == "svc" or m.startswith("svc.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException:
        failures[name] = traceback.format_exc(limit=-3)
print(json.dumps(failures))
"""


def _modules() -> list[str]:
    """Every module of the ``svc`` package, by its file (migrations included, which no package holds)."""
    names = []
    for path in sorted(_ROOT.rglob("*.py")):
        parts = path.relative_to(_ROOT.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_module_imports_alone() -> None:
    modules = _modules()
    assert "svc.engine.service" in modules and "svc.model.wire" in modules
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(modules[part::_CHILDREN])],
                                 stdout=subprocess.PIPE, text=True) for part in range(_CHILDREN)]
    failures: dict[str, str] = {}
    for child in children:
        out, _ = child.communicate(timeout=240)
        assert child.returncode == 0
        failures.update(json.loads(out.splitlines()[-1]))
    assert not failures, "\n".join(f"{name}:\n{trace}" for name, trace in failures.items())
