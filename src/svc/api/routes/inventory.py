"""Inventory reads: resources (as a Forma, as summaries, one by KSUID), stacks and targets.

``max_results`` (optional, 0 = all) is our addition: the reference always returns everything and the CLI
truncated; here the agent stops reading once it has enough.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from svc.api import deps
from svc.api.catalog_views import policy_json, stack_json, stack_policies, standalone_policies, target_json
from svc.api.problems import HttpProblem, bad_request, nothing_found
from svc.api.resource_views import ReferenceNames, resource_json, summary_json
from svc.api.responses import JSONResponse
from svc.api.streaming import PagedList, dumps, json_array, streamed
from svc.datastore import RESOURCE_FIELDS, Datastore, parse_query
from svc.model.records import Page, PolicyRecord, TargetFilter

router = APIRouter()

_KSUID = re.compile(r"[0-9A-Za-z]{27}")
_TARGET_KEYS = ("label", "namespace", "discoverable")
_LIMIT = "Return at most this many (0 or absent: all)."


def _limit(raw: str | None) -> int | None:
    return deps.max_results(raw, default=0, ceiling=None) or None


@router.get("/resources", summary="Resources matching the query, as a forma (with their stacks and targets).")
async def resources(request: Request, query: str = "", max_results: str | None = None) -> StreamingResponse:
    store = deps.datastore(request)
    parsed = parse_query(query, RESOURCE_FIELDS)
    names = ReferenceNames(store)
    stacks: set[str] = set()
    targets: set[str] = set()

    def fetch(cursor: str | None, size: int) -> Page[dict[str, Any]]:
        page = store.list_resources(parsed, cursor=cursor, limit=size)
        for resource in page.items:
            stacks.add(resource.stack)
            targets.add(resource.target)
        return Page(tuple(resource_json(resource, names) for resource in page.items), page.next_cursor)

    listing = await PagedList.open(fetch, _limit(max_results))
    if listing.empty:
        raise nothing_found("No resources found")

    async def body() -> Any:
        yield '{"Description":{},"Resources":'
        async for chunk in json_array(listing.pages()):
            yield chunk
        stack_list, target_list, policies = await deps.in_thread(_context, store, stacks, targets)
        yield f',"Stacks":{dumps(stack_list)},"Targets":{dumps(target_list)}'
        if policies:
            yield f',"Policies":{dumps(policies)}'
        yield "}"

    return streamed(body())


def _context(store: Datastore, stack_labels: set[str], target_labels: set[str]
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The stacks and targets the listed resources live in, and the standalone policies those stacks use."""
    stacks: list[dict[str, Any]] = []
    standalone: dict[str, PolicyRecord] = {}
    # Discovered resources may name a stack that was never declared: none is read for them.
    declared = sorted(store.stacks_named(stack_labels), key=lambda stack: stack.label)
    for stack, (rendered, attached) in zip(declared, stack_policies(store, declared), strict=True):
        standalone.update((policy.id, policy) for policy in attached)
        stacks.append(stack_json(stack, rendered))
    targets = [target_json(target) for label in sorted(target_labels)
               if (target := store.get_target(label)) is not None]
    return stacks, targets, [policy_json(policy) for policy in standalone.values()]


@router.get("/resources/summary", summary="Label, stack, type, target and ids of the resources matching the query.")
async def resource_summaries(request: Request, query: str = "",
                             max_results: str | None = None) -> StreamingResponse:
    store = deps.datastore(request)
    parsed = parse_query(query, RESOURCE_FIELDS)

    def fetch(cursor: str | None, size: int) -> Page[dict[str, Any]]:
        page = store.list_resource_summaries(parsed, cursor=cursor, limit=size)
        return Page(tuple(summary_json(summary) for summary in page.items), page.next_cursor)

    listing = await PagedList.open(fetch, _limit(max_results))
    return streamed(json_array(listing.pages()))  # always 200: [] when nothing matches


@router.get("/resources/by-ksuid/{ksuid}", summary="One resource by its KSUID.")
async def resource_by_ksuid(request: Request, ksuid: str) -> JSONResponse:
    if not _KSUID.fullmatch(ksuid):
        raise bad_request(f"invalid ksuid: {ksuid!r} (a KSUID is 27 letters and digits)")
    store = deps.datastore(request)

    def read() -> dict[str, Any] | None:
        resource = store.get_resource(ksuid)
        return None if resource is None else resource_json(resource, ReferenceNames(store))

    found = await deps.in_thread(read)
    if found is None:
        raise HttpProblem(404, {"error": f"no resource found for ksuid: {ksuid}"})
    return JSONResponse(found)


@router.get("/stacks", summary="Every stack with its policies (standalone ones it is attached to in full too, as "
                           "the original clients show them).")
async def list_stacks(request: Request, max_results: str | None = None) -> StreamingResponse:
    store = deps.datastore(request)

    def fetch(cursor: str | None, size: int) -> Page[dict[str, Any]]:
        page = store.list_stacks(cursor=cursor, limit=size)
        held = stack_policies(store, page.items, attached_in_full=True)
        return Page(tuple(stack_json(stack, rendered) for stack, (rendered, _) in zip(page.items, held, strict=True)),
                    page.next_cursor)

    listing = await PagedList.open(fetch, _limit(max_results))
    if listing.empty:
        raise nothing_found("No stacks found")
    return streamed(json_array(listing.pages()))


@router.get("/policies", summary="Standalone policies (declared on their own, shared by label) with the stacks "
                                 "they are attached to.")
async def list_policies(request: Request) -> JSONResponse:
    found = await deps.in_thread(standalone_policies, deps.datastore(request))
    if not found:
        raise nothing_found("No policies found")
    return JSONResponse(found)


@router.get("/targets", summary="Targets matching the query (label:, namespace:, discoverable:; * wildcards).")
async def list_targets(request: Request, query: str = "", max_results: str | None = None) -> StreamingResponse:
    store = deps.datastore(request)
    where = target_filter(query)

    def fetch(cursor: str | None, size: int) -> Page[dict[str, Any]]:
        page = store.list_targets(where, cursor=cursor, limit=size)
        return Page(tuple(target_json(target) for target in page.items), page.next_cursor)

    listing = await PagedList.open(fetch, _limit(max_results))
    if listing.empty:
        raise nothing_found("No targets found")
    return streamed(json_array(listing.pages()))


def target_filter(query: str) -> TargetFilter:
    """The target query: ``key:value`` terms, ANDed. Unknown keys are refused (the reference ignored them,
    which turned typos into "everything")."""
    values: dict[str, str] = {}
    for term in query.split():
        key, sep, value = term.partition(":")
        key = key.lower()
        if not sep or key not in _TARGET_KEYS or not value:
            reason = (f"invalid target query term {term!r}: use key:value with key one of "
                      f"{', '.join(_TARGET_KEYS)}")
            raise HttpProblem(400, {"error": "InvalidQueryError", "data": {"Reason": reason}, "message": reason})
        values[key] = value
    discoverable = values.get("discoverable")
    return TargetFilter(label=values.get("label"), namespace=values.get("namespace"),
                        discoverable=None if discoverable is None else discoverable.lower() == "true")
