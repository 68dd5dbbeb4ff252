"""The agent's CPU-heavy steps of a submission run on worker threads, not on the event loop: parsing and validating
the uploaded forma, planning, the dependency graph, the changes as shown (secrets hashed) and the update records
stored. For a forma of 100,000 resources they take seconds, during which an event loop running them answered
nothing: every other command's plugin answers and every status poll waited (``/health`` went unanswered ~0.25 s in
an apply of 20,000). Each step is wrapped to note whether it ran where an event loop runs. A command starting
thousands of changes at once lets the loop turn between them, and starts each of them once."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from svc_plugin_fake import FakeCloud

from support.engine import applied, fake_forma, finished, item, run
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
def test_planning_the_graph_the_shown_changes_and_the_update_records_run_off_the_event_loop(
        datastore: Datastore, tmp_path: Path, where: Where) -> None:
    steps = {"plan_from_store", "build_graph", "shown_change", "UpdateRecords"}
    for name in steps:
        where.wrap(admission, name)
    forma = fake_forma(tmp_path / "cloud.db", [item("a", "1"), item("b", "2", ref="a")])

    async def scenario(engine: Engine) -> None:
        await applied(engine, forma)

    run(datastore, tmp_path, scenario)
    assert {name for name, _ in where.ran} == steps
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


@pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)
def test_a_command_starting_thousands_of_changes_lets_the_event_loop_turn_between_them(
        datastore: Datastore, tmp_path: Path) -> None:
    total = 2_100  # independent: every one starts at the command's start
    forma = fake_forma(tmp_path / "cloud.db", [item(f"i{n}", "v") for n in range(total)])
    started: list[int] = []  # the changes started and not ended, at each turn of the loop

    async def scenario(engine: Engine) -> None:
        async def probe() -> None:
            while True:
                started.append(engine.runs.writes_coming())
                await asyncio.sleep(0)

        probing = asyncio.create_task(probe())
        await applied(engine, forma)
        probing.cancel()

    run(datastore, tmp_path, scenario)
    # A change ends a turn after it starts at the soonest: the first count above none is what the command's start
    # began before the loop turned again (all of them when it started every one in a single turn).
    assert next(count for count in started if count) == 1_000


@pytest.mark.parametrize("datastore_config_for_backend", ["sqlite"], indirect=True)
def test_a_change_its_producer_started_while_the_command_was_starting_runs_once(
        datastore: Datastore, tmp_path: Path) -> None:
    # 3,000 chains of two: the roots start in three turns, and roots of the first turns end (and start their
    # dependents) while the command's start has yet to reach those dependents in its own walk.
    chains = 3_000
    cloud = tmp_path / "cloud.db"
    forma = fake_forma(cloud, [item(f"c{c}-{d}", "v", ref=f"c{c}-{d - 1}" if d else None)
                               for c in range(chains) for d in range(2)])

    async def scenario(engine: Engine) -> None:
        view = await finished(engine, forma)
        # Started twice, a change's second run found its update ended already and the command ended Canceled.
        assert view.State == "Success"
        assert Counter(update.State for update in view.ResourceUpdates) == {"Success": 2 * chains}

    run(datastore, tmp_path, scenario)
    creates = Counter(call["subject"] for call in FakeCloud(cloud).calls("create"))
    assert len(creates) == 2 * chains and set(creates.values()) == {1}  # each resource created once
