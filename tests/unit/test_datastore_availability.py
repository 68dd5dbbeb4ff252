"""``Availability``: an outage is two log lines however many operations fail, and an operation that was under way
across a change of state does not make another pair (the clock is the operations' own ``time.monotonic()``)."""

from __future__ import annotations

import logging
import time

import pytest

from svc.datastore.errors import DatastoreUnavailable
from svc.datastore.outage import Availability, Backoff

DOWN = DatastoreUnavailable("datastore unavailable (test): connection refused")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage().split(":")[0] for r in caplog.records if r.name == "svc.datastore"]


def test_many_failures_and_successes_are_one_outage(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="svc.datastore")
    availability = Availability("test")
    availability.answered(time.monotonic())  # nothing to say while it answers
    for _ in range(50):
        availability.failed(DOWN, time.monotonic())
    assert availability.down
    availability.answered(time.monotonic())
    availability.answered(time.monotonic())
    assert not availability.down
    assert _lines(caplog) == ["datastore outage began", "datastore outage ended"]
    assert "50 operation(s) failed meanwhile" in caplog.records[-1].getMessage()


def test_an_operation_under_way_across_a_change_says_nothing_of_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="svc.datastore")
    availability = Availability("test")
    before_outage = time.monotonic()
    availability.failed(DOWN, time.monotonic())
    availability.answered(before_outage)  # began before the outage: proves nothing about now
    assert availability.down
    during_outage = time.monotonic()
    availability.answered(time.monotonic())
    availability.failed(DOWN, during_outage)  # began before the recovery that another operation saw
    assert not availability.down
    assert _lines(caplog) == ["datastore outage began", "datastore outage ended"]


def test_backoff_doubles_up_to_its_most_and_starts_over_when_reset() -> None:
    backoff = Backoff(1, 5)
    assert [backoff.next() for _ in range(5)] == [1, 2, 4, 5, 5]
    backoff.reset()
    assert backoff.next() == 1
