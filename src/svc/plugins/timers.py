"""An event loop whose timers fire on time, for the plugin processes.

On Linux asyncio waits with ``epoll_wait``, which counts whole milliseconds and rounds a timeout up: a timer
due in 0.2 ms fired 1 ms later, so every ``asyncio.sleep`` overslept by half a millisecond on average. The
FAKE plugin's latency knob is such a sleep, and the latency benchmark bounds an apply by that latency: a
"20 ms" call took 20.5 ms, and each call of a chain started that much later. Here a wait with a timeout is
made by ``select`` on the epoll descriptor instead (an epoll descriptor is readable when any descriptor it
watches is ready), which counts microseconds; the ready events are then collected without waiting.
Elsewhere (kqueue counts nanoseconds) the default loop is used as it is.
"""

from __future__ import annotations

import asyncio
import select
import selectors

_SELECT_LIMIT = 1024  # select() takes descriptor numbers below FD_SETSIZE only


class _PunctualEpollSelector(selectors.EpollSelector):
    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout > 0:
            select.select([self.fileno()], [], [], timeout)
            timeout = 0
        return super().select(timeout)


def punctual_loop() -> asyncio.AbstractEventLoop:
    """A new event loop whose timers fire within microseconds of when they are due (``asyncio.Runner``'s
    ``loop_factory``)."""
    if not hasattr(selectors, "EpollSelector"):
        return asyncio.new_event_loop()
    selector = _PunctualEpollSelector()
    if selector.fileno() >= _SELECT_LIMIT:  # a process with that many descriptors open waits as epoll does
        selector.close()
        return asyncio.new_event_loop()
    return asyncio.SelectorEventLoop(selector)
