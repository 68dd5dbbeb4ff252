"""The per-namespace limits every resource change passes: a token bucket and a cap on changes in flight."""

from __future__ import annotations

import asyncio
import time

from svc.engine.ratelimit import NamespaceLimits, TokenBucket


def test_a_full_bucket_grants_its_capacity_at_once_then_refills_at_its_rate() -> None:
    async def scenario() -> tuple[int, float]:
        bucket = TokenBucket(200)
        started = time.monotonic()
        for _ in range(200):
            await bucket.take()
        at_once = time.monotonic() - started
        for _ in range(60):  # 60 more tokens need at least 0.3 s of refill
            await bucket.take()
        return int(at_once < 0.25), time.monotonic() - started

    burst_was_immediate, seconds = asyncio.run(scenario())
    assert burst_was_immediate
    assert seconds >= 0.29


def test_takers_that_wait_are_served_in_arrival_order() -> None:
    async def scenario() -> list[int]:
        bucket = TokenBucket(50, capacity=1)
        await bucket.take()  # empty now
        served: list[int] = []

        async def taker(number: int) -> None:
            await bucket.take()
            served.append(number)

        tasks = []
        for number in range(5):
            tasks.append(asyncio.create_task(taker(number)))
            await asyncio.sleep(0)  # arrives after the one before
        await asyncio.gather(*tasks)
        return served

    assert asyncio.run(scenario()) == [0, 1, 2, 3, 4]


def test_waiting_takers_are_released_together_in_one_turn_of_the_loop() -> None:
    """At 1,000 a second, waiting takers go five at a time every 5 ms, not one a millisecond: their calls then
    reach the plugin in one write to its pipe."""
    async def scenario() -> list[tuple[int, int]]:
        loop = asyncio.get_running_loop()
        turns = 0

        def count_turns() -> None:
            nonlocal turns
            turns += 1
            loop.call_soon(count_turns)

        count_turns()
        bucket = TokenBucket(1000, capacity=10)
        for _ in range(10):
            await bucket.take()  # empty now
        served: list[tuple[int, int]] = []

        async def taker(number: int) -> None:
            await bucket.take()
            served.append((number, turns))

        tasks = []
        for number in range(10):
            tasks.append(asyncio.create_task(taker(number)))
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return served

    served = asyncio.run(scenario())
    assert [number for number, _ in served] == list(range(10))  # still first come, first served
    groups = [[number for number, turn in served if turn == at] for at in sorted({turn for _, turn in served})]
    # The first waited alone for its token; the others, queued meanwhile, went in groups ([1..5], [6..9], or
    # larger ones on a machine so slow that more tokens were made meanwhile).
    assert len(groups) <= 3 and all(len(group) > 1 for group in groups[1:]), groups


def test_no_more_changes_than_the_cap_are_in_flight_and_a_slot_frees_on_exit() -> None:
    async def scenario() -> tuple[int, list[str]]:
        limits = NamespaceLimits(1000, 2)
        inside = 0
        most = 0
        events: list[str] = []
        release = asyncio.Event()

        async def change(name: str) -> None:
            nonlocal inside, most
            async with limits.dispatch():
                inside += 1
                most = max(most, inside)
                events.append(f"in {name}")
                if name != "c":
                    await release.wait()
                inside -= 1
                events.append(f"out {name}")

        tasks = [asyncio.create_task(change(name)) for name in "abc"]
        for _ in range(5):
            await asyncio.sleep(0)
        assert events == ["in a", "in b"]  # c waits for a slot
        release.set()
        await asyncio.gather(*tasks)
        return most, events

    most, events = asyncio.run(scenario())
    assert most == 2
    assert events.index("in c") > events.index("out a")


def test_a_change_canceled_while_waiting_for_a_token_gives_its_slot_back() -> None:
    async def scenario() -> bool:
        limits = NamespaceLimits(0.5, 1)  # one token, the next in two seconds
        await limits.bucket.take()
        entered = False

        async def change() -> None:
            nonlocal entered
            async with limits.dispatch():
                entered = True

        waiting = asyncio.create_task(change())
        await asyncio.sleep(0.01)
        assert limits.slots.locked()  # it holds the only slot while it waits for a token
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert not entered
        return limits.slots.locked()

    assert asyncio.run(scenario()) is False
