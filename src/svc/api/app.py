"""The agent's HTTP API (FastAPI), mounted under ``/api/v1``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from fastapi import APIRouter, FastAPI, Request
from starlette.exceptions import HTTPException as StarletteHTTPException

from svc.api.auth import BasicAuthenticator, BasicAuthMiddleware
from svc.api.command_views import conflict_data
from svc.api.forwarding import Forwarder, ForwardToLeader
from svc.api.health import DatastoreHealth
from svc.api.problems import HttpProblem
from svc.api.responses import JSONResponse
from svc.api.routes import ROUTERS
from svc.config.model import AgentConfig
from svc.datastore import Datastore, DatastoreUnavailable, InvalidCursorError, InvalidQueryError, LeadershipLost
from svc.engine.errors import ConflictingCommands, EngineError
from svc.engine.leadership import Leadership
from svc.engine.service import CommandService

API_PREFIX = "/api/v1"


@dataclass(frozen=True)
class AgentInfo:
    """What the API tells about the running agent."""

    version: str
    agent_id: str
    # Namespace (upper case) → version of each installed plugin, read once at start: the agent runs the plugins
    # it found then, and scanning every distribution's entry points cost each ``/stats`` (each command) ~15 ms.
    plugin_versions: Mapping[str, str]


class Engine(CommandService, Protocol):
    """The command service with a lifetime: its plugins started before the API serves, stopped after; it runs
    commands while ``leadership`` has it lead."""

    async def start_plugins(self) -> None: ...

    async def stop(self) -> None: ...


def create_app(config: AgentConfig, info: AgentInfo, datastore: Datastore, engine: Engine,
               leadership: Leadership) -> FastAPI:
    """The API over ``datastore``; ``engine`` serves commands and runs while the API serves and this agent leads."""
    forwarder = Forwarder(leadership)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await engine.start_plugins()
            await leadership.start()
        except Exception as error:
            # uvicorn only logs a failed startup; the agent's lifecycle reads this and exits with it.
            app.state.startup_error = error
            raise
        try:
            yield
        finally:
            await leadership.step_down()
            await leadership.close()
            await engine.stop()
            await forwarder.aclose()

    app = FastAPI(
        title="svc agent API",
        version=info.version,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.info = info
    app.state.datastore = datastore
    app.state.service = engine
    app.state.leadership = leadership
    app.state.startup_error = None
    health_check = DatastoreHealth(datastore)
    router = APIRouter(prefix=API_PREFIX)

    @router.get("/health", summary="200 when the agent and its datastore are healthy, else 503; the body names this "
                                   "agent's version, its role (leader or follower) and the leading agent. Never "
                                   "authenticated.",
                responses={503: {"description": "The datastore is unreachable."}})
    async def health() -> JSONResponse:
        problem = await health_check.problem()
        if problem is None:
            leader = leadership.leader()
            return JSONResponse({"Version": info.version, "Role": leadership.role, "AgentId": info.agent_id,
                                 "Leader": leader.agent_id if leader is not None else None})
        return JSONResponse({"message": f"datastore unavailable: {problem}"}, status_code=503)

    for area in ROUTERS:
        router.include_router(area)
    app.include_router(router)
    _install_error_handlers(app)
    # Added before authentication, so it runs inside it: a follower passes on only what its own users may ask.
    app.add_middleware(ForwardToLeader, forwarder=forwarder, api_prefix=API_PREFIX)
    if config.auth is not None:
        app.add_middleware(BasicAuthMiddleware, authenticator=BasicAuthenticator(config.auth.authorized_users))
    return app


def _install_error_handlers(app: FastAPI) -> None:
    """Typed failures become the reference's error bodies; nothing else leaks a traceback."""

    @app.exception_handler(EngineError)
    async def engine_error(_: Request, error: EngineError) -> JSONResponse:
        return JSONResponse({"error": error.error_type, "data": error.data, "message": error.message},
                            status_code=error.status, headers=_retry_after(error.status))

    @app.exception_handler(ConflictingCommands)
    async def conflicting_commands(_: Request, error: ConflictingCommands) -> JSONResponse:
        return JSONResponse({"error": error.error_type, "data": conflict_data(error), "message": error.message},
                            status_code=error.status)

    @app.exception_handler(InvalidQueryError)
    async def invalid_query(_: Request, error: InvalidQueryError) -> JSONResponse:
        return JSONResponse({"error": "InvalidQueryError", "data": {"Reason": str(error)}, "message": str(error)},
                            status_code=400)

    @app.exception_handler(InvalidCursorError)
    async def invalid_cursor(_: Request, error: InvalidCursorError) -> JSONResponse:
        return JSONResponse({"message": str(error)}, status_code=400)

    @app.exception_handler(DatastoreUnavailable)
    async def datastore_unavailable(_: Request, error: DatastoreUnavailable) -> JSONResponse:
        if isinstance(error, LeadershipLost):
            return JSONResponse({"message": "this agent no longer leads (another agent takes over); nothing was done, "
                                            "retry in a moment"}, status_code=503, headers=_retry_after(503))
        return JSONResponse({"message": f"datastore unavailable: {error}; retry when it is back"}, status_code=503,
                            headers=_retry_after(503))

    @app.exception_handler(StarletteHTTPException)
    async def http_exception(_: Request, error: StarletteHTTPException) -> JSONResponse:
        # The reference's untyped error shape (unknown paths, wrong methods), not FastAPI's {"detail": …}.
        return JSONResponse({"message": str(error.detail)}, status_code=error.status_code, headers=error.headers)

    @app.exception_handler(HttpProblem)
    async def http_problem(_: Request, problem: HttpProblem) -> JSONResponse:
        if problem.body is None:
            return JSONResponse(None, status_code=problem.status)
        return JSONResponse(problem.body, status_code=problem.status)


def _retry_after(status: int) -> dict[str, str] | None:
    """A 503 did nothing: the client may send the same request again after a second (the CLI does)."""
    return {"Retry-After": "1"} if status == 503 else None
