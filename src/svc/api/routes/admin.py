"""``/admin/*``: run a background job now instead of waiting for its timer (operators and tests).

Each endpoint runs its job to the end and answers 200 with what the run did. The run starts after the
request arrived (after the run in progress, if any: ``PeriodicJob.run_now``), so it sees what the caller
changed just before.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from svc.api import deps
from svc.api.problems import HttpProblem
from svc.engine.background import PeriodicJob

router = APIRouter()


def _job(request: Request, name: str) -> PeriodicJob:
    job = getattr(deps.service(request), "jobs", {}).get(name)
    if job is None:
        raise HttpProblem(503, {"message": f"this agent runs no {name} job"})
    return job


@router.post("/admin/discover", summary="Run discovery now: list every discoverable target for resources svc does "
                                        "not manage yet and store them as unmanaged. 200 with what the run found.")
async def discover(request: Request) -> dict[str, Any]:
    report = await _job(request, "discovery").run_now()
    return report.to_json()


@router.post("/admin/synchronize", summary="Run synchronization now: read every resource and store what changed "
                                           "outside svc. 200 with the sync command's id (null: nothing changed).")
async def synchronize(request: Request) -> dict[str, Any]:
    result = await _job(request, "synchronization").run_now()
    return result.to_json() if hasattr(result, "to_json") else {"CommandId": result}


@router.post("/admin/check-ttl", summary="Run the TTL sweep now: destroy the stacks whose TTL policy expired. 200 with "
                                         "{expired_stacks, command_ids}.")
async def check_ttl(request: Request) -> dict[str, Any]:
    sweep = await _job(request, "stack-expirer").run_now()
    return sweep.to_json()
