"""What a command remembers of the resource states it produced (``Steps.produced`` / ``Steps.stored``), from
which its references resolve without reading the datastore."""

from __future__ import annotations

import asyncio

from svc.engine.change_execution import Steps
from svc.model.records import ResourceWrite, StoreOutcome


def _steps() -> Steps:
    return Steps("command", store=None, writer=None, gateway=None)  # type: ignore[arg-type]


def _write(native_id: str) -> ResourceWrite:
    return ResourceWrite(type="FAKE::Test::Item", label="b", stack="app", target="cloud", properties={"Value": "1"},
                         native_id=native_id, ksuid="k")


def _known(steps: Steps) -> object:
    return asyncio.run(steps._load("k"))


def test_a_replaces_delete_committed_after_its_create_answered_keeps_the_new_state() -> None:
    steps = _steps()
    created = _write("n-new")
    steps.produced("k", None)  # the delete answered
    steps.produced("k", created)  # the create, started at once, answered before the delete's end was committed
    steps.stored("k", None, None)  # the delete's end is committed
    assert _known(steps) is created


def test_a_state_stored_under_another_ksuid_is_forgotten_and_one_stored_as_is_kept() -> None:
    steps = _steps()
    adopted = _write("n-1")
    steps.produced("k", adopted)
    steps.stored("k", adopted, StoreOutcome("elsewhere", "v1", True, "create"))
    assert "k" not in steps._produced

    kept = _write("n-2")
    steps.produced("k", kept)
    steps.stored("k", kept, StoreOutcome("k", "v1", True, "create"))
    assert _known(steps) is kept


class _CountingStore:
    """A datastore whose reads of a resource take a while and are counted."""

    def __init__(self) -> None:
        self.reads = 0

    def get_resource(self, ksuid: str) -> ResourceWrite:
        import time

        self.reads += 1
        time.sleep(0.05)
        return _write(f"n-{self.reads}")


def test_changes_that_refer_to_one_stored_resource_at_once_share_one_read_of_it() -> None:
    store = _CountingStore()
    steps = Steps("command", store=store, writer=None, gateway=None)  # type: ignore[arg-type]

    async def together() -> None:
        first = await asyncio.gather(*(steps._load("k") for _ in range(10)))
        assert store.reads == 1 and all(found is first[0] for found in first)
        later = await steps._load("k")  # the read is over: a later reference reads the row again
        assert store.reads == 2 and later is not first[0]

    asyncio.run(together())


def test_a_canceled_change_leaves_the_shared_read_to_the_others() -> None:
    store = _CountingStore()
    steps = Steps("command", store=store, writer=None, gateway=None)  # type: ignore[arg-type]

    async def one_canceled() -> None:
        canceled = asyncio.ensure_future(steps._load("k"))
        waiting = asyncio.ensure_future(steps._load("k"))
        await asyncio.sleep(0.01)
        canceled.cancel()
        assert (await waiting).native_id == "n-1" and canceled.cancelled() and store.reads == 1

    asyncio.run(one_canceled())
