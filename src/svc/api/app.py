"""The agent's HTTP API (FastAPI), mounted under ``/api/v1``."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from svc.api.auth import BasicAuthenticator, BasicAuthMiddleware
from svc.api.health import DatastoreHealth
from svc.config.model import AgentConfig
from svc.datastore import Datastore, DatastoreUnavailable, InvalidQueryError
from svc.engine.errors import EngineError

API_PREFIX = "/api/v1"


@dataclass(frozen=True)
class AgentInfo:
    """What the API tells about the running agent."""

    version: str
    agent_id: str


class Stats(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    Version: str
    AgentId: str


def create_app(config: AgentConfig, info: AgentInfo, datastore: Datastore) -> FastAPI:
    app = FastAPI(
        title="svc agent API",
        version=info.version,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    app.state.datastore = datastore
    health_check = DatastoreHealth(datastore)
    router = APIRouter(prefix=API_PREFIX)

    @router.get("/health", summary="200 when the agent and its datastore are healthy, else 503. Never authenticated.",
                responses={503: {"description": "The datastore is unreachable."}})
    async def health() -> JSONResponse:
        problem = await health_check.problem()
        if problem is None:
            return JSONResponse(None)
        return JSONResponse({"message": f"datastore unavailable: {problem}"}, status_code=503)

    @router.get("/stats", summary="The agent's version, id and counts.")
    async def stats() -> Stats:
        return Stats(Version=info.version, AgentId=info.agent_id)

    app.include_router(router)
    _install_error_handlers(app)
    if config.auth is not None:
        app.add_middleware(BasicAuthMiddleware, authenticator=BasicAuthenticator(config.auth.authorized_users))
    return app


def _install_error_handlers(app: FastAPI) -> None:
    """Typed failures become the reference's error bodies; nothing else leaks a traceback."""

    @app.exception_handler(EngineError)
    async def engine_error(_: Request, error: EngineError) -> JSONResponse:
        return JSONResponse({"error": error.error_type, "data": error.data, "message": error.message},
                            status_code=error.status)

    @app.exception_handler(InvalidQueryError)
    async def invalid_query(_: Request, error: InvalidQueryError) -> JSONResponse:
        return JSONResponse({"error": "InvalidQueryError", "data": {"Reason": str(error)}}, status_code=400)

    @app.exception_handler(DatastoreUnavailable)
    async def datastore_unavailable(_: Request, error: DatastoreUnavailable) -> JSONResponse:
        return JSONResponse({"message": f"datastore unavailable: {error}; retry when it is back"}, status_code=503)
