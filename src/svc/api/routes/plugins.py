"""``GET /plugins`` and ``GET /plugins/{name}``: the installed plugins, merged with the agent's running ones.

The reference's shape, camelCase (``{"plugins": [Plugin]}``). A plugin the agent runs also shows its process
(``loadStatus`` running | restarting | failed, and ``process``: pid, restarts, calls in flight); an installed
plugin the config does not enable shows ``loadStatus: "disabled"``. There is no plugin repository, so
``scope=available`` answers 503 as the reference's shipped agent does.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from svc.api import deps
from svc.api.problems import HttpProblem
from svc.api.responses import JSONResponse
from svc.plugins.listing import installed_listing

router = APIRouter()
_SCOPES = ("installed", "available")


async def _plugins(request: Request) -> list[dict[str, Any]]:
    running = deps.service(request).plugin_processes()
    plugins = []
    for plugin in await deps.in_thread(installed_listing):
        process = running.get(plugin["namespace"].upper())
        if process is None:
            plugin.setdefault("loadStatus", "disabled")
        else:
            plugin["loadStatus"] = process["state"]
            plugin["process"] = process
        plugins.append(plugin)
    return plugins


@router.get("/plugins", summary="Installed plugins (and, for enabled ones, their processes).")
async def plugins(request: Request, scope: str = "installed") -> JSONResponse:
    if scope not in _SCOPES:
        raise HttpProblem(400, {"message": f"scope must be one of {', '.join(_SCOPES)}, not {scope!r}"})
    if scope == "available":
        raise HttpProblem(503, {"message": "plugin manager not configured"})
    return JSONResponse({"plugins": await _plugins(request)})


@router.get("/plugins/{name}", summary="One installed plugin, by name or namespace.")
async def plugin(request: Request, name: str) -> JSONResponse:
    for found in await _plugins(request):
        if name.lower() in (found["name"].lower(), found["namespace"].lower()):
            return JSONResponse({"plugin": found})
    raise HttpProblem(404, {"error": "PluginNotFound", "data": {"Name": name},
                            "message": f"no installed plugin is named {name}"})
