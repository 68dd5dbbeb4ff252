"""The engine: the command service, the planner, the executor and the background loops of DESIGN.md.

By role: ``service`` (the ``CommandService`` protocol the API calls) is implemented by ``engine.Engine``,
which ``factory.build_engine(config, datastore)`` composes. ``admission`` plans (``planner``, pure), checks
and stores a command; ``executor`` schedules its DAG and ``change_execution`` runs each resource change;
``runs`` holds the commands executing, ``queries`` reads them back, ``cancel`` stops them, ``recovery``
resumes them after a restart; ``command_records`` turns changes into stored records and back; ``gateway``
is the only caller of plugins (runner by namespace, calls, retries, polling, rate limits). Background
loops (``background``): ``sync``, ``discovery``, ``expiry`` (TTL), ``reconciler`` (auto-reconcile).
Imported lazily: ``svc.engine.errors`` and the planner must stay cheap to import (the CLI uses them).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Engine", "EngineSettings", "build_engine"]


def __getattr__(name: str) -> Any:
    if name == "build_engine":
        from svc.engine.factory import build_engine

        return build_engine
    if name in ("Engine", "EngineSettings"):
        from svc.engine import engine

        return getattr(engine, name)
    raise AttributeError(name)
