"""``punctual_loop``: the plugin processes' event loop waits for its next timer to the microsecond, and still
wakes at once for I/O."""

from __future__ import annotations

import asyncio
import select
import selectors
import socket
import time

import pytest

from svc.plugins import timers
from svc.plugins.timers import punctual_loop

pytestmark = pytest.mark.skipif(not hasattr(selectors, "EpollSelector"), reason="epoll is Linux's")


def test_a_timer_is_waited_for_to_the_microsecond(monkeypatch: pytest.MonkeyPatch) -> None:
    """epoll would have waited 13 ms for a timer due in 12.3 ms; the wait asks for 12.3 ms."""
    waits: list[float] = []
    real_select = select.select

    def recording(rlist: list[int], wlist: list[int], xlist: list[int], timeout: float | None = None) -> tuple:
        if timeout:
            waits.append(timeout)
        return real_select(rlist, wlist, xlist, timeout)

    monkeypatch.setattr(select, "select", recording)
    with asyncio.Runner(loop_factory=punctual_loop) as runner:
        runner.run(asyncio.sleep(0.0123))
    assert waits, "the loop never waited through select"
    assert any(0.011 < wait <= 0.0123 and round(wait * 1000) != wait * 1000 for wait in waits), waits


def test_timers_never_fire_early() -> None:
    async def sleeps() -> list[float]:
        slept = []
        for _ in range(20):
            started = time.monotonic()
            await asyncio.sleep(0.0023)
            slept.append(time.monotonic() - started)
        return slept

    with asyncio.Runner(loop_factory=punctual_loop) as runner:
        assert min(runner.run(sleeps())) >= 0.0023


def test_io_wakes_the_loop_while_a_later_timer_waits() -> None:
    """The select on the epoll descriptor sees a ready socket: a reader runs at once, not when the next timer
    (an hour away) is due."""
    async def main() -> bytes:
        loop = asyncio.get_running_loop()
        left, right = socket.socketpair()
        left.setblocking(False)
        got: asyncio.Future[bytes] = loop.create_future()
        loop.add_reader(left, lambda: got.done() or got.set_result(left.recv(16)))
        later = loop.call_later(3600, lambda: None)
        loop.call_later(0.01, right.send, b"ping")
        try:
            return await asyncio.wait_for(got, 5)
        finally:
            later.cancel()
            loop.remove_reader(left)
            left.close()
            right.close()

    with asyncio.Runner(loop_factory=punctual_loop) as runner:
        assert runner.run(main()) == b"ping"


def test_a_process_with_descriptors_beyond_select_s_range_keeps_epoll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timers, "_SELECT_LIMIT", 0)
    loop = punctual_loop()
    try:
        assert type(loop._selector) is selectors.EpollSelector  # type: ignore[attr-defined]
        assert loop.run_until_complete(asyncio.sleep(0.001, "slept")) == "slept"
    finally:
        loop.close()
