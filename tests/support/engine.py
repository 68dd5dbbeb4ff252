"""An in-process Engine over a real datastore and the FAKE plugin (in-process runner), plus forma builders.

A test writes its scenario as ``async def scenario(engine)`` and runs it with ``run(datastore, tmp_path,
scenario)``; inside, ``await applied(engine, forma)`` submits a forma as a client would and waits for its
command to succeed (``finished``: to end, however it ends; ``reconciled``: a reconcile that may have nothing
to do). ``shown(engine)`` answers as a client sees it: the command service's records rendered by the API's
views (``svc.api.command_views``).

Formas are built as the evaluated JSON the CLI sends (``fake_forma``), with the FAKE plugin's real
descriptors (extracted once from its Pkl schema package), so tests need no Pkl evaluation per forma.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from svc.api.command_views import cancel_response, stored_view, submit_response
from svc.datastore.interface import Datastore
from svc.engine.engine import Engine
from svc.engine.gateway import PluginGateway, PluginLimits
from svc.engine.operations import RetryPolicy
from svc.engine.planner import Catalog
from svc.engine.sealing import Sealer
from svc.engine.service import ApplyRequest, Caller, DestroyRequest
from svc.model import wire
from svc.model.forma import Forma
from svc.model.schema import Schema
from svc.plugins.installed import installed_plugins
from svc.plugins.runner import InProcessRunner
from svc.schema.extract import extract_descriptors

CALLER = Caller("client-1")
TIMEOUT = 60  # seconds a command may take before a test calls it hung (a bound, never a measure)
FAST_RETRY = RetryPolicy(max_retries=3, retry_delay=0.01, status_interval=0.01, call_timeout=5.0)


@functools.cache
def fake_schemas() -> dict[str, Schema]:
    plugin = next(p for p in installed_plugins() if p.namespace == "FAKE")
    return {name: d.schema_ for name, d in extract_descriptors(plugin).items()}


def make_engine(datastore: Datastore, key_file: Path, *, retry: RetryPolicy = FAST_RETRY, rate: float = 10_000,
                max_in_flight: int = 64) -> Engine:
    runner = InProcessRunner.load("FAKE", {}, max_threads=max_in_flight)
    catalog = Catalog(frozenset({"FAKE"}), fake_schemas())
    gateway = PluginGateway({"FAKE": runner}, retry=retry, plugins={"FAKE": PluginLimits(rate, max_in_flight, retry)})
    return Engine(datastore, gateway, catalog, Sealer.from_file(key_file))


class Shown:
    """The engine's answers as the API renders them (``svc.api.command_views``): what a client sees."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def apply(self, request: ApplyRequest, caller: Caller) -> wire.SubmitCommandResponse:
        return submit_response(await self.engine.apply(request, caller), caller)

    async def destroy(self, request: DestroyRequest, caller: Caller) -> wire.SubmitCommandResponse:
        return submit_response(await self.engine.destroy(request, caller), caller)

    async def command(self, command_id: str, **kwargs: Any) -> wire.CommandView | None:
        stored = await self.engine.command(command_id, **kwargs)
        return stored_view(stored) if stored is not None else None

    async def wait(self, command_id: str, timeout: float | None = None) -> wire.CommandView | None:
        stored = await self.engine.wait(command_id, timeout)
        return stored_view(stored) if stored is not None else None

    async def cancel(self, query: str, caller: Caller, *, force: bool) -> wire.CancelCommandResponse | None:
        outcome = await self.engine.cancel(query, caller, force=force)
        return cancel_response(outcome) if outcome is not None else None


def shown(engine: Engine) -> Shown:
    """The engine, answering as the API renders its answers."""
    return Shown(engine)


@asynccontextmanager
async def running(engine: Engine) -> AsyncIterator[Engine]:
    """The engine started, and stopped on the way out."""
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


def run_with_engine(datastore: Datastore, key_file: Path, scenario: Callable[[Engine], Awaitable[None]]) -> None:
    """Runs ``scenario`` on a fresh event loop against a running ``make_engine`` engine."""
    async def main() -> None:
        async with running(make_engine(datastore, key_file)) as engine:
            await scenario(engine)

    asyncio.run(main())


def run(datastore: Datastore, tmp_path: Path, scenario: Callable[[Engine], Awaitable[None]]) -> None:
    """``scenario(engine)`` against a running engine on ``datastore``, its sealing key under ``tmp_path``."""
    run_with_engine(datastore, tmp_path / "engine.key", scenario)


async def finished(engine: Engine, forma: Forma, mode: str = "reconcile", **request: Any) -> Any:
    """``forma`` submitted by ``CALLER`` (``request``: more ``ApplyRequest`` fields, e.g. ``force=True``); it
    must have changes to make. Its command's view once it has ended, however it ended."""
    response = await shown(engine).apply(ApplyRequest(forma, mode, **request), CALLER)  # type: ignore[arg-type]
    assert response.Simulation.ChangesRequired, f"{mode} of the forma planned no changes"
    view = await shown(engine).wait(response.CommandId, TIMEOUT)
    assert view is not None, f"command {response.CommandId} is unknown"
    return view


async def applied(engine: Engine, forma: Forma, mode: str = "reconcile", **request: Any) -> Any:
    """``finished``, and the command succeeded: its view."""
    view = await finished(engine, forma, mode, **request)
    assert view.State == "Success", [(u.ResourceLabel, u.State, u.ErrorMessage) for u in view.ResourceUpdates]
    return view


async def reconciled(engine: Engine, forma: Forma, *, force: bool = False) -> Any:
    """A reconcile that may have nothing to do (then no command runs); when it has, its command succeeded.
    The submit's answer (``Simulation``, ``CommandId``)."""
    response = await shown(engine).apply(ApplyRequest(forma, "reconcile", force=force), CALLER)
    if response.Simulation.ChangesRequired:
        view = await shown(engine).wait(response.CommandId, TIMEOUT)
        assert view is not None and view.State == "Success", view
    return response


def res(label: str, type_: str, prop: str, stack: str = "app", *, opaque: bool = False) -> dict[str, Any]:
    """A ``$res`` reference as Pkl renders ``<resource>.res.<prop>``."""
    return {"$res": True, "$label": label, "$type": type_, "$property": prop, "$stack": stack,
            "$visibility": "Opaque" if opaque else "Clear"}


def resource(label: str, type_: str, properties: dict[str, Any], *, stack: str = "app", target: str = "cloud",
             alias: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"Label": label, "Type": type_, "Stack": stack, "Target": target,
                                "Schema": fake_schemas().get(type_, fake_schemas()["FAKE::Test::Item"]).to_json(),
                                "Properties": properties}
    if alias:
        document["Alias"] = alias
    return document


def item(label: str, value: str | None = None, *, ref: str | None = None, token: str | None = None,
         stack: str = "app", target: str = "cloud", ref_stack: str | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    if value is not None:
        properties["Value"] = value
    if ref is not None:
        properties["Ref"] = res(ref, "FAKE::Test::Item", "Id", ref_stack or stack)
    if token is not None:
        properties["Token"] = token
    return resource(label, "FAKE::Test::Item", properties, stack=stack, target=target)


def fake_forma(cloud: Path, resources: list[dict[str, Any]], *, stacks: tuple[str, ...] = ("app",),
               target: str = "cloud", note: str | None = None) -> Forma:
    config: dict[str, Any] = {"Type": "FAKE", "Path": str(cloud)}
    if note is not None:
        config["Note"] = note
    return Forma.model_validate({
        "Stacks": [{"Label": s} for s in stacks],
        "Targets": [{"Label": target, "Namespace": "FAKE", "Config": config,
                     "ConfigSchema": {"Hints": {"Path": {"CreateOnly": True}, "Note": {"CreateOnly": False}}}}],
        "Resources": resources,
    })
