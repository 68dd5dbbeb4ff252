"""The agent's garbage-collector policy.

The agent allocates in bursts of many small, mostly long-lived objects: a submission's forma, its plan, its
graph and its changes, alive until the command ends. Reference counting frees almost everything anyway (the
collector only exists for cycles), yet CPython's collector walks each of those objects when it is young, again in
the middle generation, and then in every full collection while it lives (one whenever the old generation has grown
by a quarter): 3.7 s of a 100,000-resource apply's CPU, 1.3 s of it before the first plugin call, and 4.8 s of its
destroy's (``docs/performance.md``). Hence:

* larger thresholds than CPython's (``THRESHOLDS``), from the CLI's first import on (``svc agent start`` is a CLI
  command); at start-up the agent moves what exists out of the collector's sight (``tune_collector``);
* a submission is admitted with the collector paused, and what it made is frozen then, when it started a command
  (``admitting``): never walked while its command runs. A simulation's or a no-op's objects die with the
  answer, and their cycles with the next young collection: frozen, they piled up until a full collection of the
  whole heap (a third of a second at 1,000 resources) every few no-op plans;
* what was frozen comes back into the collector's sight once the frozen objects have grown by half since the
  last time (``settle``, called once the agent is idle: no command running, none being admitted, for a moment):
  one full collection then frees the cycles that died frozen, and freezes what lives. It walks every object the
  agent holds (0.13 s in one holding a stack of 100 resources and some history), which on the path of a command's
  last answer, or of the next submission, was a pause a user waited for every few dozen commands. A cycle made
  during a submission (an exception's traceback, say) waits for that; the growth bounds the memory it can hold,
  and an agent never idle long enough collects at a submission's start once the frozen objects have tripled
  (``OVERDUE_GROWTH``). The growth is counted as objects are frozen (the young generation's count, which the
  paused collector left growing), never by ``gc.get_freeze_count()``: that walks the whole frozen list, 100 ms of
  every submission's CPU in an agent holding a 1,000-resource stack.

``admitting`` and ``settle`` do nothing in a process that did not ``tune_collector`` (a test embedding the
engine keeps CPython's collector as it is).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("svc.collector")

# Young collections every 50,000 net allocations; the middle one every 20 of them; the oldest every 10 middle
# ones (and, as always, only once the objects awaiting it are a quarter of those already there).
THRESHOLDS = (50_000, 20, 10)

# How much the frozen objects may grow, as a share of what was frozen at the last settle, before they are
# collected again once the agent is idle; and before they are collected at a submission's start, idle or not.
SETTLE_GROWTH = 0.5
OVERDUE_GROWTH = 2.0


class _Policy:
    tuned = False
    admitting = 0  # submissions being admitted (they overlap on the event loop)
    resume = True  # whether the collector was on when the first of them began
    started = False  # whether one of them started a command
    settled = 0  # objects frozen after the last settle
    grown = 0  # objects frozen since (about: what the young generation had counted when each freeze came)
    admitted_at = 0.0  # time.monotonic() when the last submission's admission ended


class Admitted:
    """An ``admitting`` block's say: ``started`` once the submission started a command (what it made then lives
    until the command ends)."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = False


_policy = _Policy()


def tune_collector() -> None:
    """Sets the thresholds, and moves what exists now (modules, config, schemas: never garbage) out of the
    collector's sight. Call once the process has started up."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    _policy.tuned = True
    _policy.settled, _policy.grown = gc.get_freeze_count(), 0


@contextmanager
def admitting() -> Iterator[Admitted]:
    """The collector paused while a submission is admitted (parsed, planned, stored, started); once the last
    overlapping one ends, what they made is frozen if one of them started a command (``Admitted.started``), and the
    collector resumes."""
    admitted = Admitted()
    if not _policy.tuned:
        yield admitted
        return
    if _policy.admitting == 0:
        settle(growth=OVERDUE_GROWTH)
        _policy.resume = gc.isenabled()
        gc.disable()
    _policy.admitting += 1
    try:
        yield admitted
    finally:
        _policy.admitting -= 1
        _policy.admitted_at = time.monotonic()
        _policy.started = _policy.started or admitted.started
        if _policy.admitting == 0:
            if _policy.started:
                _policy.grown += gc.get_count()[0]
                gc.freeze()
            _policy.started = False
            if _policy.resume:
                gc.enable()


def since_admission() -> float:
    """Seconds since a submission was last admitted here (0 while one is)."""
    return 0.0 if _policy.admitting else time.monotonic() - _policy.admitted_at


def settle(*, growth: float = SETTLE_GROWTH) -> None:
    """One full collection of everything, then everything frozen again, once the frozen objects have grown by
    ``growth`` since the last time (never while a submission is being admitted)."""
    if not _policy.tuned or _policy.admitting or _policy.grown <= _policy.settled * growth:
        return
    started, frozen = time.perf_counter(), _policy.settled + _policy.grown
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _policy.settled, _policy.grown = gc.get_freeze_count(), 0
    log.debug("collector settled: ~%d frozen objects, %d after a full collection (%.3f s)", frozen,
              _policy.settled, time.perf_counter() - started)
