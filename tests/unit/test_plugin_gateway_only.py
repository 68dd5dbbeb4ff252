"""The plugin gateway (``svc.engine.gateway``) is the only place the agent calls plugins (DESIGN.md
"Architecture"): no other module of the agent imports what a plugin call needs (a runner's ``Call``, its
``PluginRunner`` protocol, the runners' exception mapping). The composition root (``svc.engine.factory``) makes
the runners it hands to the gateway; any module may name the errors a runner raises.
"""

from __future__ import annotations

import ast
from pathlib import Path

_SRC = Path(__file__).resolve().parents[2] / "src"
_RUNNERS = ("svc.plugins.runner", "svc.plugins.host", "svc.plugins.process", "svc.plugins.protocol")
_ERRORS = frozenset({"PluginLoadError", "PluginCallError"})
_ALLOWED = {
    "svc.engine.gateway": None,  # anything: it is the gateway
    "svc.engine.factory": _ERRORS | {"InProcessRunner", "HostedPlugin", "PluginRunner"},  # makes the runners
}


def _module(path: Path) -> str:
    parts = path.relative_to(_SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _reaches(module: str, source: str) -> list[str]:
    """What ``module`` (its ``source``) imports from the runners beyond what it may."""
    allowed = _ALLOWED.get(module, _ERRORS)
    if allowed is None:
        return []
    found = []
    for node in ast.walk(ast.parse(source, module)):
        if isinstance(node, ast.ImportFrom) and node.module in _RUNNERS:
            found += [f"{module}:{node.lineno}: {alias.name} from {node.module}"
                      for alias in node.names if alias.name not in allowed]
        elif isinstance(node, ast.ImportFrom) and node.module == "svc.plugins":
            found += [f"{module}:{node.lineno}: {alias.name} from svc.plugins"
                      for alias in node.names if f"svc.plugins.{alias.name}" in _RUNNERS]
        elif isinstance(node, ast.Import):
            found += [f"{module}:{node.lineno}: import {alias.name}" for alias in node.names
                      if alias.name in _RUNNERS]
    return found


def test_only_the_gateway_calls_plugins() -> None:
    paths = [path for path in (_SRC / "svc").rglob("*.py") if path.relative_to(_SRC).parts[1] != "plugins"]
    modules = {_module(path): path.read_text() for path in paths}
    assert {"svc.engine.gateway", "svc.engine.change_execution", "svc.engine.sync", "svc.engine.discovery"} <= set(modules)
    found = [line for module, source in modules.items() for line in _reaches(module, source)]
    assert not found, "\n".join(found)


def test_a_call_made_elsewhere_is_found() -> None:
    source = "from svc.plugins.runner import Call, PluginCallError\nimport svc.plugins.host\nfrom svc.plugins import process\n"
    assert _reaches("svc.engine.change_execution", source) == [
        "svc.engine.change_execution:1: Call from svc.plugins.runner", "svc.engine.change_execution:2: import svc.plugins.host",
        "svc.engine.change_execution:3: process from svc.plugins"]
    assert _reaches("svc.engine.gateway", source) == []
