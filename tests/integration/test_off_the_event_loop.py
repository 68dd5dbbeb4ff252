"""The agent's CPU-heavy steps of a submission run on worker threads, not on the event loop: parsing and validating
the uploaded forma, planning, the dependency graph and the changes as shown (secrets hashed). For a forma of
100,000 resources they take seconds, during which an event loop running them answered nothing: every other
command's plugin answers and every status poll waited (``/health`` went unanswered ~0.25 s in an apply of 20,000).
Each step is wrapped to note whether it ran where an event loop runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from support.engine import applied, fake_forma, item, run
from svc.api import submission
from svc.datastore import Datastore
from svc.engine import admission
from svc.engine.engine import Engine


def _on_an_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Where:
    """Wraps functions in place (``wrap(module, name)``); ``ran`` lists (name, on an event loop) per call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.ran: list[tuple[str, bool]] = []

    def wrap(self, module: Any, name: str) -> None:
        original = getattr(module, name)

        def noted(*args: Any, **kwargs: Any) -> Any:
            self.ran.append((name, _on_an_event_loop()))
            return original(*args, **kwargs)

        self.monkeypatch.setattr(module, name, noted)


@pytest.fixture
def where(monkeypatch: pytest.MonkeyPatch) -> Where:
    return Where(monkeypatch)


@pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)
def test_planning_the_graph_and_the_shown_changes_run_off_the_event_loop(
        datastore: Datastore, tmp_path: Path, where: Where) -> None:
    for name in ("plan_from_store", "build_graph", "shown_change"):
        where.wrap(admission, name)
    forma = fake_forma(tmp_path / "cloud.db", [item("a", "1"), item("b", "2", ref="a")])

    async def scenario(engine: Engine) -> None:
        await applied(engine, forma)

    run(datastore, tmp_path, scenario)
    assert {name for name, _ in where.ran} == {"plan_from_store", "build_graph", "shown_change"}
    assert [name for name, on_loop in where.ran if on_loop] == []


def test_the_uploaded_forma_is_parsed_off_the_event_loop(tmp_path: Path, where: Where) -> None:
    where.wrap(submission, "parse_forma")
    forma = fake_forma(tmp_path / "cloud.db", [item("a", "1")])
    upload = httpx.Request("POST", "http://agent/api/v1/commands", data={"command": "apply", "mode": "reconcile"},
                           files={"file": ("forma.json", forma.model_dump_json(by_alias=True))})
    body = upload.read()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def read() -> Any:
        scope = {"type": "http", "method": "POST", "path": "/api/v1/commands",
                 "headers": [(k.lower().encode(), v.encode()) for k, v in upload.headers.items()]}
        return await submission.read_submission(Request(scope, receive))

    request = asyncio.run(read())
    assert [resource.label for resource in request.forma.resources] == ["a"]
    assert where.ran == [("parse_forma", False)]
