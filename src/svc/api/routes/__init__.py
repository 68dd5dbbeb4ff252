"""The API's routes, one module per area; ``app.create_app`` mounts them under ``/api/v1``."""

from fastapi import APIRouter

from svc.api.routes import admin, commands, inventory, plugins, stacks, stats

ROUTERS: tuple[APIRouter, ...] = (admin.router, commands.router, inventory.router, plugins.router, stacks.router,
                                  stats.router)
