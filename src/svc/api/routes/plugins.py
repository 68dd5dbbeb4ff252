"""``/plugins``: the installed plugins and those a package source offers; install, update and uninstall.

The reference's shapes, camelCase: ``GET /plugins`` → ``{"plugins": [Plugin]}``; ``POST /plugins/install |
uninstall | update`` take ``{"packages": [{"name", "version"?}], "channel"?}`` and answer
``{"operations": [{name, type, version?, action}], "requiresRestart": false, "warnings"?}``. Here the agent does
the work itself (``svc.engine.plugin_manager``), with no restart; ``channel`` is accepted and ignored (a package
source has no channels). Two more request members name the package source, as ``svc upgrade``'s options do:
``indexUrl`` and ``findLinks`` (query parameters of the same names for ``scope=available``); without them, the
source svc itself was installed from.

A plugin the agent runs also shows its process (``loadStatus`` running | restarting | failed, and ``process``:
pid, restarts, calls in flight); an installed plugin the agent does not run shows ``loadStatus: "disabled"``.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from fastapi import APIRouter, Query, Request
from packaging.version import InvalidVersion, Version

from svc.api import deps
from svc.api.problems import HttpProblem, bad_request
from svc.api.responses import JSONResponse
from svc.engine.plugin_manager import resolve_source
from svc.engine.service import JobNotRunning, PackageRequest
from svc.plugins.available import SourceUnreadable, available_plugins, matches
from svc.plugins.installed import normalized_name, plugin_distributions
from svc.plugins.listing import installed_listing

router = APIRouter()
_SCOPES = ("installed", "available")
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")  # PEP 508: a name, never a pip option or URL
_URL_SCHEMES = ("http", "https", "file")


async def _installed(request: Request, name: str | None = None) -> list[dict[str, Any]]:
    """The installed plugins as listed (``installed_listing``: with ``name``, only the one it names when it can tell)
    with their processes."""
    running = deps.service(request).plugin_processes()
    plugins = []
    for plugin in await deps.in_thread(installed_listing, name):
        process = running.get(plugin["namespace"].upper())
        if process is None:
            plugin.setdefault("loadStatus", "disabled")
        else:
            plugin["loadStatus"] = process["state"]
            plugin["process"] = process
        plugins.append(plugin)
    return plugins


def _location(value: str, what: str) -> str:
    scheme = urllib.parse.urlsplit(value).scheme
    if value.startswith("-") or (scheme not in _URL_SCHEMES and not value.startswith("/")):
        raise bad_request(f"{what} must be an http(s):// or file:// URL or an absolute path, not {value!r}")
    return value


def _source_request(index_url: str | None, find_links: list[str]) -> tuple[str | None, list[str]]:
    """The request's package source, checked: URLs or absolute paths, never a pip option."""
    return (_location(index_url, "indexUrl") if index_url else None,
            [_location(link, "findLinks") for link in find_links if link])


@router.get("/plugins", summary="Installed plugins (with their processes), or those a package source offers "
                                "(scope=available); filtered by q, category and type.")
async def plugins(request: Request, scope: str = "installed", q: str = "", category: str = "",
                  type: str = "",  # noqa: A002 - the reference's query parameter
                  channel: str = "", indexUrl: str | None = None,  # noqa: N803 - the wire's camelCase
                  findLinks: list[str] = Query(default=[])) -> JSONResponse:  # noqa: B008, N803
    if scope not in _SCOPES:
        raise HttpProblem(400, {"message": f"scope must be one of {', '.join(_SCOPES)}, not {scope!r}"})
    if scope == "installed":
        found = [plugin for plugin in await _installed(request) if matches(plugin, q, category, type)]
        return JSONResponse({"plugins": found})
    source = resolve_source(*_source_request(indexUrl, findLinks))
    installed = {name: plugins[0].version for name, plugins in (await deps.in_thread(plugin_distributions)).items()}
    try:
        found = await deps.in_thread(available_plugins, source, installed, query=q, category=category,
                                     plugin_type=type)
    except SourceUnreadable as error:
        raise HttpProblem(502, {"message": f"{error} (package source {source.describe()})"}) from None
    return JSONResponse({"plugins": found})


@router.get("/plugins/{name}", summary="One installed plugin, by name or namespace.")
async def plugin(request: Request, name: str) -> JSONResponse:
    for found in await _installed(request, name):
        if name.lower() in (found["name"].lower(), found["namespace"].lower()):
            return JSONResponse({"plugin": found})
    raise HttpProblem(404, {"error": "PluginNotFound", "data": {"Name": name},
                            "message": f"no installed plugin is named {name}"})


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise bad_request('the body must be JSON: {"packages": [{"name": "…", "version": "…"}]}') from None
    if not isinstance(body, dict):
        raise bad_request('the body must be a JSON object: {"packages": [{"name": "…", "version": "…"}]}')
    return body


def _packages(body: dict[str, Any], *, required: bool) -> list[PackageRequest]:
    listed = body.get("packages") or []
    if not isinstance(listed, list) or (required and not listed):
        raise bad_request('packages must be a non-empty list: {"packages": [{"name": "svc-plugin-…"}]}')
    packages = []
    for item in listed:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not _NAME.match(name):
            raise bad_request(f"each package needs a name (a distribution name such as svc-plugin-aws), not {item!r}")
        version = item.get("version") or None
        if version is not None:
            try:
                Version(str(version))
            except InvalidVersion:
                raise bad_request(f"package {name}: version must be an exact version such as 1.2.0, "
                                  f"not {version!r}") from None
        packages.append(PackageRequest(normalized_name(name), str(version) if version else None))
    return packages


def _body_source(body: dict[str, Any]) -> tuple[str | None, list[str]]:
    links = body.get("findLinks") or []
    index_url = body.get("indexUrl")
    if not isinstance(links, list) or not all(isinstance(link, str) for link in links) or not isinstance(
            index_url, str | None):
        raise bad_request("indexUrl must be a string and findLinks a list of strings")
    return _source_request(index_url, links)


async def _managed(run: Any) -> JSONResponse:
    try:
        done = await run
    except JobNotRunning:
        raise HttpProblem(503, {"message": "plugin manager not configured"}) from None
    return JSONResponse(done.to_json())


@router.post("/plugins/install", summary="pip-install plugin distributions into the agent's environment and start "
                                         "their plugins, without a restart.")
async def install(request: Request) -> JSONResponse:
    body = await _body(request)
    packages = _packages(body, required=True)
    return await _managed(deps.service(request).install_plugins(packages, *_body_source(body)))


@router.post("/plugins/update", summary="Update plugin distributions (none named: all) and restart their plugins on "
                                        "the new code.")
async def update(request: Request) -> JSONResponse:
    body = await _body(request)
    packages = _packages(body, required=False)
    return await _managed(deps.service(request).update_plugins(packages, *_body_source(body)))


@router.post("/plugins/uninstall", summary="Stop plugins and pip-uninstall their distributions; 409 while a running "
                                           "command changes their resources.")
async def uninstall(request: Request) -> JSONResponse:
    body = await _body(request)
    packages = _packages(body, required=True)
    return await _managed(deps.service(request).uninstall_plugins([package.name for package in packages]))
