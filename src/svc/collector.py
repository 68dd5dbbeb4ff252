"""The agent's garbage-collector policy.

The agent allocates in bursts of many small, mostly long-lived objects: a submission's forma, its plan, its
graph and its changes, alive until the command ends. Reference counting frees almost everything anyway (the
collector only exists for cycles), yet CPython's collector walks each of those objects when it is young, again in
the middle generation, and then in every full collection while it lives (one whenever the old generation has grown
by a quarter): 3.7 s of a 100,000-resource apply's CPU, 1.3 s of it before the first plugin call, and 4.8 s of its
destroy's (``docs/performance.md``). Hence:

* larger thresholds than CPython's (``THRESHOLDS``), from the CLI's first import on (``svc agent start`` is a CLI
  command); at start-up the agent moves what exists out of the collector's sight (``tune_collector``);
* a submission is admitted with the collector paused, and what it made is frozen then (``admitting``): never
  walked while its command runs;
* what was frozen comes back into the collector's sight once the frozen objects have grown by half since the
  last time (``settle``, when a command ends and before a submission): one full collection then frees the cycles
  that died frozen, and freezes what lives. A cycle made during a submission (an exception's traceback, say)
  waits for that; the growth bounds the memory it can hold.

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
# collected again.
SETTLE_GROWTH = 0.5


class _Policy:
    tuned = False
    admitting = 0  # submissions being admitted (they overlap on the event loop)
    resume = True  # whether the collector was on when the first of them began
    settled = 0  # objects frozen after the last settle


_policy = _Policy()


def tune_collector() -> None:
    """Sets the thresholds, and moves what exists now (modules, config, schemas: never garbage) out of the
    collector's sight. Call once the process has started up."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    _policy.tuned = True
    _policy.settled = gc.get_freeze_count()


@contextmanager
def admitting() -> Iterator[None]:
    """The collector paused while a submission is admitted (parsed, planned, stored, started); once the last
    overlapping one ends, what they made is frozen and the collector resumes."""
    if not _policy.tuned:
        yield
        return
    if _policy.admitting == 0:
        settle()
        _policy.resume = gc.isenabled()
        gc.disable()
    _policy.admitting += 1
    try:
        yield
    finally:
        _policy.admitting -= 1
        if _policy.admitting == 0:
            gc.freeze()
            if _policy.resume:
                gc.enable()


def settle() -> None:
    """One full collection of everything, then everything frozen again, once the frozen objects have grown by
    ``SETTLE_GROWTH`` since the last time (never while a submission is being admitted)."""
    if not _policy.tuned or _policy.admitting or gc.get_freeze_count() <= _policy.settled * (1 + SETTLE_GROWTH):
        return
    started, frozen = time.perf_counter(), gc.get_freeze_count()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _policy.settled = gc.get_freeze_count()
    log.debug("collector settled: %d frozen objects, %d after a full collection (%.3f s)", frozen,
              _policy.settled, time.perf_counter() - started)
