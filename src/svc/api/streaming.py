"""Lists answered page by page: the agent never holds a whole inventory in memory.

A handler reads the first page itself (so that "nothing found", a bad query or a datastore outage still
get their own status code), then the response body streams the remaining pages as they are read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi.responses import StreamingResponse

from svc.api.deps import in_thread
from svc.datastore import DatastoreUnavailable
from svc.model.records import Page

T = TypeVar("T")
log = logging.getLogger("svc.api")

PAGE_SIZE = 200
# Fetches one page: (cursor, page size) -> page; runs on a worker thread.
Fetch = Callable[[str | None, int], Page[T]]


@dataclass
class PagedList(Generic[T]):
    """A datastore list read lazily, at most ``limit`` items (None: all)."""

    fetch: Fetch[T]
    limit: int | None
    first: Page[T]

    @classmethod
    async def open(cls, fetch: Fetch[T], limit: int | None = None) -> PagedList[T]:
        return cls(fetch, limit, await in_thread(fetch, None, _size(limit)))

    @property
    def empty(self) -> bool:
        return not self.first.items

    async def pages(self) -> AsyncIterator[tuple[T, ...]]:
        page, remaining = self.first, self.limit
        while True:
            items = page.items if remaining is None else page.items[:remaining]
            yield items
            if remaining is not None:
                remaining -= len(items)
            if page.next_cursor is None or remaining == 0:
                return
            page = await in_thread(self.fetch, page.next_cursor, _size(remaining))


def _size(remaining: int | None) -> int:
    return PAGE_SIZE if remaining is None else max(1, min(PAGE_SIZE, remaining))


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


async def json_array(pages: AsyncIterator[Iterable[Any]]) -> AsyncIterator[str]:
    """``[item,item,…]`` from pages of JSON-ready items."""
    yield "["
    first = True
    async for page in pages:
        for item in page:
            yield ("" if first else ",") + dumps(item)
            first = False
    yield "]"


def streamed(body: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(_logged(body), media_type="application/json")


async def _logged(body: AsyncIterator[str]) -> AsyncIterator[str]:
    # Once the status line is sent a failure can only cut the body short (the client sees invalid
    # JSON); the log says why.
    try:
        async for chunk in body:
            yield chunk
    except DatastoreUnavailable:
        raise  # the datastore logs an outage once, not once per request it cut short
    except Exception:
        log.exception("a streamed list failed part-way")
        raise
