"""The agent's collector policy (``svc.collector``): a submission's objects frozen, its dead cycles freed later.

Each case runs in a fresh interpreter: ``tune_collector`` freezes the whole process, which a test process must not.
"""

from __future__ import annotations

import json
import subprocess
import sys

_PRELUDE = """
import gc, json, weakref
from svc.collector import admitting, settle, tune_collector

class Node:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it

def cycle():
    node = Node()
    return weakref.ref(node)
"""


def _run(body: str) -> dict:
    result = subprocess.run([sys.executable, "-c", _PRELUDE + body], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_submission_runs_with_the_collector_off_and_what_a_command_made_is_frozen() -> None:
    seen = _run("""
tune_collector()
before = gc.get_freeze_count()
with admitting() as admitted:
    inside = gc.isenabled()
    kept = [[] for _ in range(1000)]
    admitted.started = True
print(json.dumps({"inside": inside, "after": gc.isenabled(), "frozen": gc.get_freeze_count() - before}))
""")
    assert seen["inside"] is False and seen["after"] is True
    assert seen["frozen"] >= 1000


def test_what_a_simulation_made_is_not_frozen_and_its_cycles_die_young() -> None:
    seen = _run("""
tune_collector()
before = gc.get_freeze_count()
with admitting():  # a simulation, or a no-op: no command started
    inside = gc.isenabled()
    kept = [[] for _ in range(1000)]
    dead = cycle()
frozen = gc.get_freeze_count() - before
gc.collect(0)
print(json.dumps({"inside": inside, "after": gc.isenabled(), "frozen": frozen, "freed": dead() is None}))
""")
    assert seen == {"inside": False, "after": True, "frozen": 0, "freed": True}


def test_overlapping_submissions_freeze_what_they_made_when_one_started_a_command() -> None:
    seen = _run("""
tune_collector()
before = gc.get_freeze_count()
first, second = admitting(), admitting()
first.__enter__().started = True
second.__enter__()
kept = [[] for _ in range(1000)]
first.__exit__(None, None, None)
second.__exit__(None, None, None)
print(json.dumps({"frozen": gc.get_freeze_count() - before}))
""")
    assert seen["frozen"] >= 1000


def test_overlapping_submissions_resume_the_collector_when_the_last_ends() -> None:
    seen = _run("""
tune_collector()
first, second = admitting(), admitting()
first.__enter__()
second.__enter__()
first.__exit__(None, None, None)
between = gc.isenabled()
second.__exit__(None, None, None)
print(json.dumps({"between": between, "after": gc.isenabled()}))
""")
    assert seen == {"between": False, "after": True}


def test_a_cycle_that_died_frozen_is_freed_once_the_frozen_objects_grew_by_half() -> None:
    seen = _run("""
tune_collector()
with admitting() as admitted:
    dead = cycle()
    admitted.started = True
gc.collect()
frozen_survives = dead() is not None
settle()  # grown by a handful of objects: nothing to do yet
small_growth_survives = dead() is not None
with admitting() as admitted:
    kept = [[] for _ in range(gc.get_freeze_count())]  # the frozen objects double
    admitted.started = True
settle()
print(json.dumps({"frozen": frozen_survives, "small": small_growth_survives, "settled": dead() is None,
                  "kept": len(kept)}))
""")
    assert seen["frozen"] and seen["small"] and seen["settled"]


def test_a_submission_collects_first_only_what_is_overdue() -> None:
    """The full collection waits for the agent to be idle (``settle``); a submission's start collects only once the
    frozen objects have tripled, the bound on what an agent never idle can hold."""
    seen = _run("""
tune_collector()
with admitting() as admitted:
    dead = cycle()
    admitted.started = True
with admitting() as admitted:
    kept = [[] for _ in range(gc.get_freeze_count())]  # the frozen objects double: due when idle
    admitted.started = True
with admitting():
    pass
survives_a_submission = dead() is not None
with admitting() as admitted:
    more = [[] for _ in range(2 * gc.get_freeze_count())]  # and more than triple: overdue
    admitted.started = True
with admitting():
    pass
print(json.dumps({"survived": survives_a_submission, "overdue": dead() is None, "kept": len(kept) + len(more)}))
""")
    assert seen["survived"] and seen["overdue"]


def test_a_process_that_did_not_tune_the_collector_keeps_it_as_it_is() -> None:
    seen = _run("""
with admitting():
    inside = gc.isenabled()
    dead = cycle()
settle()
gc.collect()
print(json.dumps({"inside": inside, "frozen": gc.get_freeze_count(), "freed": dead() is None}))
""")
    assert seen == {"inside": True, "frozen": 0, "freed": True}


def test_the_collector_stays_off_after_a_submission_when_it_was_off_before() -> None:
    seen = _run("""
tune_collector()
gc.disable()
with admitting():
    pass
print(json.dumps({"after": gc.isenabled()}))
""")
    assert seen == {"after": False}
