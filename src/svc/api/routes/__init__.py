"""The API's routes, one module per area; ``app.create_app`` mounts them under ``/api/v1``."""

from fastapi import APIRouter

from svc.api.routes import commands, inventory, plugins, stats

ROUTERS: tuple[APIRouter, ...] = (commands.router, inventory.router, plugins.router, stats.router)
