"""The engine: planning (pure), execution (the only caller of plugins), commands and their states.

``build_engine(config, datastore)`` makes the ``Engine`` (a ``CommandService``) the agent serves.
Imported lazily: ``svc.engine.errors`` and the planner must stay cheap to import (the CLI uses them).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Engine", "EngineSettings", "PluginLimits", "build_engine"]


def __getattr__(name: str) -> Any:
    if name == "build_engine":
        from svc.engine.build import build_engine

        return build_engine
    if name in ("Engine", "EngineSettings", "PluginLimits"):
        from svc.engine import engine

        return getattr(engine, name)
    raise AttributeError(name)
