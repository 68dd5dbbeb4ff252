"""``PeriodicJob.run_now``: the result a caller gets is from a run that started after the call."""

from __future__ import annotations

import asyncio

from svc.engine.background import PeriodicJob


class _World:
    """A job that reads a value the caller can change, slowly enough for calls to arrive mid-run."""

    def __init__(self) -> None:
        self.value = "before"
        self.runs = 0
        self.reading = asyncio.Event()
        self.release = asyncio.Event()

    async def work(self) -> str:
        self.runs += 1
        seen = self.value  # read at the start of the run, as synchronization reads the cloud
        self.reading.set()
        await self.release.wait()
        return seen


def test_a_call_during_a_run_gets_the_next_run_which_sees_what_changed_before_the_call() -> None:
    async def scenario() -> None:
        world = _World()
        job = PeriodicJob("sync", world.work, interval=3600, enabled=False)
        first = asyncio.create_task(job.run_now())
        await world.reading.wait()
        world.value = "after"  # a hand edit while that run is under way, after it read the value
        second = asyncio.create_task(job.run_now())
        third = asyncio.create_task(job.run_now())
        world.release.set()
        assert await first == "before"
        assert await second == "after" and await third == "after"
        assert world.runs == 2  # the callers that arrived during one run share the next

    asyncio.run(scenario())


def test_a_call_with_no_run_in_progress_starts_one_at_once() -> None:
    async def scenario() -> None:
        world = _World()
        world.release.set()
        job = PeriodicJob("sync", world.work, interval=3600, enabled=False)
        assert await job.run_now() == "before"
        world.value = "after"
        assert await job.run_now() == "after"
        assert world.runs == 2 and not job.running

    asyncio.run(scenario())


def test_stop_cancels_a_waiting_follow_up_run() -> None:
    async def scenario() -> None:
        world = _World()
        job = PeriodicJob("sync", world.work, interval=3600, enabled=False)
        first = asyncio.create_task(job.run_now())
        await world.reading.wait()
        waiting = asyncio.create_task(job.run_now())
        await asyncio.sleep(0)
        await job.stop()
        results = await asyncio.gather(first, waiting, return_exceptions=True)
        assert all(isinstance(result, asyncio.CancelledError) for result in results)
        assert world.runs == 1

    asyncio.run(scenario())
