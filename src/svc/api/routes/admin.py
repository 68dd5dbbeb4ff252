"""``/admin/*``: run a background job now instead of waiting for its timer (operators and tests).

Each endpoint runs its job to the end and answers 200 with what the run did. The run starts after the
request arrived (after the run in progress, if any: ``PeriodicJob.run_now``), so it sees what the caller
changed just before.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from fastapi import APIRouter, Request

from svc.api import deps
from svc.api.problems import HttpProblem
from svc.engine.service import JobNotRunning

router = APIRouter()
T = TypeVar("T")


async def _run(run: Awaitable[T]) -> T:
    try:
        return await run
    except JobNotRunning as error:
        raise HttpProblem(503, {"message": str(error)}) from None


@router.post("/admin/discover", summary="Run discovery now: list every discoverable target for resources svc does "
                                        "not manage yet and store them as unmanaged. 200 with what the run found.")
async def discover(request: Request) -> dict[str, Any]:
    report = await _run(deps.service(request).run_discovery())
    return report.to_json()


@router.post("/admin/synchronize", summary="Run synchronization now: read every resource and store what changed "
                                           "outside svc. 200 with the sync command's id (null: nothing changed) "
                                           "and Changed: each resource whose stored state the run changed "
                                           "{Stack, Type, Label, Operation: update|delete|evict}.")
async def synchronize(request: Request) -> dict[str, Any]:
    report = await _run(deps.service(request).run_synchronization())
    return report.to_json()


@router.post("/admin/reap", summary="Run a target-reaper tick now: reap the targets unreachable for longer than their "
                                    "ReapAfter allows. 200 with {ReapedTargets, ReapPendingTargets} (target labels).")
async def reap(request: Request) -> dict[str, Any]:
    report = await _run(deps.service(request).run_reap())
    return report.to_json()


@router.post("/admin/check-ttl", summary="Run the TTL sweep now: destroy the stacks whose TTL policy expired. 200 with "
                                         "{expired_stacks, command_ids}.")
async def check_ttl(request: Request) -> dict[str, Any]:
    sweep = await _run(deps.service(request).run_ttl_check())
    return sweep.to_json()
