"""The plugin driven directly through the real subprocess host, as the agent's gateway drives it: the kit's own
look at what the provider holds (reads and paged lists), beside what the agent stores."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from svc.plugins.conformance.case import Case, ConformanceFailure, Json, expect
from svc.plugins.host import HostedPlugin
from svc.plugins.installed import installed_plugins
from svc.plugins.runner import Call
from svc.plugins.sdk import ListResult, Progress, ReadResult

T = TypeVar("T")
_CALL_TIMEOUT = 30.0


class DirectPlugin:
    """A ``HostedPlugin`` of its own, on an event loop in a thread, called synchronously."""

    def __init__(self, namespace: str) -> None:
        version = next((p.version for p in installed_plugins() if p.namespace == namespace), "")
        self.host = HostedPlugin(namespace, version, {})
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def __enter__(self) -> DirectPlugin:
        self.thread.start()
        self.run(self.host.start())
        return self

    def __exit__(self, *_: object) -> None:
        self.run(self.host.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    @staticmethod
    def _call(case: Case) -> Call:
        return Call(case.resource_type, case.target_config, _CALL_TIMEOUT)

    def create(self, case: Case, label: str, properties: Json) -> Progress:
        return self.run(self.host.create(self._call(case), label, properties))

    def read(self, case: Case, native_id: str) -> ReadResult:
        return self.run(self.host.read(self._call(case), native_id, None))

    def list_all(self, case: Case, page_size: int = 1) -> list[str]:
        """Every native id of the type, page by page (small pages: paging is part of the contract)."""
        ids: list[str] = []
        token: str | None = None
        for _ in range(10_000):
            page: ListResult = self.run(self.host.list(self._call(case), page_size, token, {}))
            expect(len(page.native_ids) <= page_size, f"a page of {page_size} held {len(page.native_ids)} ids")
            ids.extend(page.native_ids)
            token = page.next_page_token
            if not token:
                return ids
        raise ConformanceFailure("list never ended: 10000 pages, each with a next page token")
