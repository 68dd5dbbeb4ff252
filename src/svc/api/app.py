"""The agent's HTTP API (FastAPI), mounted under ``/api/v1``."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, FastAPI
from pydantic import BaseModel, ConfigDict

from svc.api.auth import BasicAuthenticator, BasicAuthMiddleware
from svc.config.model import AgentConfig

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


def create_app(config: AgentConfig, info: AgentInfo) -> FastAPI:
    app = FastAPI(
        title="svc agent API",
        version=info.version,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    router = APIRouter(prefix=API_PREFIX)

    @router.get("/health", summary="Liveness: 200 when the agent is healthy. Never authenticated.")
    async def health() -> None:
        return None

    @router.get("/stats", summary="The agent's version, id and counts.")
    async def stats() -> Stats:
        return Stats(Version=info.version, AgentId=info.agent_id)

    app.include_router(router)
    if config.auth is not None:
        app.add_middleware(BasicAuthMiddleware, authenticator=BasicAuthenticator(config.auth.authorized_users))
    return app
