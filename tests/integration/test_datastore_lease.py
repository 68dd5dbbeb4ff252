"""The leader lease and write fencing (issue 29), on every backend: taking, renewing, releasing and expiring the
lease by the database clock, one winner among racing agents, fenced writes refused once another agent took over;
on the server backends, a paused ex-leader's open write transaction delays a takeover only until the server ends
its idle session, and never commits after it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from svc.config.model import DatastoreConfig
from svc.datastore import Datastore, DatastoreUnavailable, LeadershipLost, open_datastore
from svc.datastore import write_fence as write_fence_module
from svc.datastore.migrate import head_revision, migrate
from svc.datastore.sql_lease import LOCK_TIMEOUT_MS
from svc.datastore.sql_store import SqlDatastore
from svc.datastore.tables import background_runs
from svc.model.records import RunState

LONG = 60.0  # seconds: a lease that does not expire during a test
SHORT = 0.2  # seconds: a lease a test waits out


def _expire(seconds: float = SHORT) -> None:
    time.sleep(seconds + 0.1)


# -- the lease -------------------------------------------------------------------------------------------------

def test_acquire_is_refused_while_held_and_allowed_after_release(datastore: Datastore) -> None:
    assert datastore.read_lease() is None
    assert datastore.acquire_lease("a", "http://a:49684", LONG) == 1
    lease = datastore.read_lease()
    assert lease is not None
    assert (lease.holder, lease.holder_url, lease.epoch) == ("a", "http://a:49684", 1)
    assert LONG - 5 < lease.remaining <= LONG + 0.01  # SQLite keeps times to the millisecond
    assert datastore.acquire_lease("b", "http://b", LONG) is None
    assert datastore.acquire_lease("a", "http://a:49684", LONG) is None  # held, even by the same agent
    assert not datastore.release_lease("b", 1)  # not b's
    assert not datastore.release_lease("a", 2)  # not at that epoch
    assert datastore.release_lease("a", 1)
    released = datastore.read_lease()
    assert released is not None
    assert (released.holder, released.holder_url, released.epoch) == (None, "", 1)
    assert released.remaining <= 0
    assert not datastore.release_lease("a", 1)  # once
    assert datastore.acquire_lease("b", "http://b", LONG) == 2
    assert datastore.read_lease().holder == "b"  # type: ignore[union-attr]


def test_an_expired_lease_is_taken_and_its_old_holder_cannot_renew_it(datastore: Datastore) -> None:
    assert datastore.acquire_lease("a", "http://a", SHORT) == 1
    assert datastore.acquire_lease("b", "http://b", LONG) is None
    _expire()
    assert datastore.read_lease().remaining <= 0  # type: ignore[union-attr]
    assert datastore.acquire_lease("b", "http://b", LONG) == 2
    assert not datastore.renew_lease("a", 1, LONG)  # another epoch holds it
    assert not datastore.release_lease("a", 1)
    lease = datastore.read_lease()
    assert lease is not None and (lease.holder, lease.epoch) == ("b", 2) and lease.remaining > LONG - 5


def test_a_holder_renews_its_own_lease_even_after_it_expired(datastore: Datastore) -> None:
    epoch = datastore.acquire_lease("a", "http://a", SHORT)
    assert epoch == 1
    assert datastore.renew_lease("a", epoch, SHORT)
    _expire()
    assert datastore.read_lease().remaining <= 0  # type: ignore[union-attr]
    assert datastore.renew_lease("a", epoch, LONG)  # nobody took over meanwhile: the epoch proves it
    lease = datastore.read_lease()
    assert lease is not None and (lease.holder, lease.epoch) == ("a", 1) and lease.remaining > LONG - 5
    assert not datastore.renew_lease("b", epoch, LONG)
    assert datastore.acquire_lease("b", "http://b", LONG) is None


def test_leases_are_per_name(datastore: Datastore) -> None:
    assert datastore.acquire_lease("a", "http://a", LONG) == 1
    assert datastore.acquire_lease("b", "http://b", LONG, name="other") == 1
    assert datastore.read_lease("other").holder == "b"  # type: ignore[union-attr]
    assert datastore.read_lease().holder == "a"  # type: ignore[union-attr]


def test_racing_agents_have_one_winner_per_epoch(datastore: Datastore, second: Datastore) -> None:
    """Two agents (two datastore objects, each with its own connections) race for the lease, first while nobody
    ever held it (both may try to create the row), then each round once the winner released it or let it expire."""
    rounds = 12
    barrier = threading.Barrier(2)

    def contend(store: Datastore, name: str) -> list[int | None]:
        results = []
        for _ in range(rounds):
            barrier.wait(timeout=30)
            results.append(store.acquire_lease(name, f"http://{name}", LONG))
            barrier.wait(timeout=30)  # both attempts are over before the round's winner lets go
            epoch = results[-1]
            if epoch is not None:
                # Odd epochs are released, even ones expire (renewed to zero): both ways to hand over.
                assert store.release_lease(name, epoch) if epoch % 2 else store.renew_lease(name, epoch, 0)
        return results

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda args: contend(*args), [(datastore, "a"), (second, "b")])
    for round_, pair in enumerate(zip(a, b, strict=True)):
        winners = [epoch for epoch in pair if epoch is not None]
        assert winners == [round_ + 1], f"round {round_}: {pair}"
    assert datastore.read_lease().epoch == rounds  # type: ignore[union-attr]


# -- fencing ---------------------------------------------------------------------------------------------------

def _write_paths(store: Datastore, tag: str) -> list[Callable[[], object]]:
    """Writes through each transaction path: ``write`` (begin_run) and ``write_retrying`` (create_stack)."""
    return [lambda: store.begin_run("sync", tag, stale_after=timedelta(minutes=5)),
            lambda: store.create_stack(tag)]


def test_fenced_writes_stop_once_another_agent_took_the_lease(datastore: Datastore, second: Datastore) -> None:
    lost: list[int | None] = []
    epoch = datastore.acquire_lease("a", "http://a", SHORT)
    assert epoch == 1
    datastore.fence_writes(epoch, lost.append)
    for write in _write_paths(datastore, "before"):
        write()
    assert datastore.get_stack("before") is not None

    _expire()
    assert second.acquire_lease("b", "http://b", LONG) == 2
    for write in _write_paths(datastore, "after"):
        with pytest.raises(LeadershipLost) as caught:
            write()
        assert caught.value.epoch == 2 and "another agent took the leader lease" in str(caught.value)
        assert isinstance(caught.value, DatastoreUnavailable)  # "try later" everywhere it is caught
    assert lost == [2]  # called once
    assert second.get_stack("after") is None and second.get_run("sync", "after") is None
    assert datastore.get_stack("before") is not None  # reads are not fenced
    second.create_stack("by-b")  # the new leader's (unfenced here) writes go on


def test_fenced_writes_stop_once_the_lease_is_released(datastore: Datastore) -> None:
    lost: list[int | None] = []
    epoch = datastore.acquire_lease("a", "http://a", LONG)
    assert epoch is not None
    datastore.fence_writes(epoch, lost.append)
    datastore.create_stack("held")
    assert datastore.release_lease("a", epoch)
    with pytest.raises(LeadershipLost, match="released"):
        datastore.create_stack("released")
    assert lost == [epoch] and datastore.get_stack("released") is None


def test_a_process_that_does_not_lead_writes_nothing_and_asks_nothing(datastore: Datastore) -> None:
    assert isinstance(datastore, SqlDatastore)
    lost: list[int | None] = []
    datastore.fence_writes(None, lost.append)
    checkouts: list[object] = []
    sa.event.listen(datastore.engine, "checkout", lambda *args: checkouts.append(args))
    for write in _write_paths(datastore, "follower"):
        with pytest.raises(LeadershipLost, match="does not lead"):
            write()
    assert checkouts == []  # refused without a connection
    assert lost == []  # nothing was lost: it never led
    # A follower still takes the lease (the lease's own writes are not fenced), then fences at its epoch.
    epoch = datastore.acquire_lease("f", "http://f", LONG)
    assert epoch == 1
    datastore.fence_writes(epoch)
    datastore.create_stack("follower")
    assert datastore.get_stack("follower") is not None


def test_an_unfenced_datastore_writes_without_any_lease(datastore: Datastore, second: Datastore) -> None:
    assert second.acquire_lease("b", "http://b", LONG) == 1
    datastore.create_stack("tool")  # tools and tests never call fence_writes: no check at all
    assert datastore.get_stack("tool") is not None


# -- a paused ex-leader (server backends) ----------------------------------------------------------------------

@pytest.mark.parametrize("datastore_config_for_backend", ["postgres", "auroradataapi"], indirect=True)
def test_a_paused_leader_delays_a_takeover_only_until_its_session_is_ended(
        datastore: Datastore, second: Datastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader begins a fenced write and stops before committing (as a SIGSTOPped process would, holding the
    lease row's share lock). Another agent's takeover waits, but only until its lock wait times out: then it ends
    the expired leader's sessions that hold the row (the server's idle timeout, set long here, is not what ends
    it; a session stopped inside a pipelined statement never counts as idle). The paused write never commits, and
    the ex-leader's later writes are refused."""
    idle_ms = 60_000
    monkeypatch.setattr(write_fence_module, "IDLE_IN_TRANSACTION_TIMEOUT_MS", idle_ms)
    assert isinstance(datastore, SqlDatastore)
    epoch = datastore.acquire_lease("a", "http://a", SHORT)
    assert epoch == 1
    datastore.fence_writes(epoch)
    paused, resume = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def paused_write() -> None:
        try:
            with datastore.write() as conn:  # type: ignore[attr-defined]
                conn.execute(sa.insert(background_runs).values(
                    kind="sync", scope="paused", run_id="r1", state=str(RunState.RUNNING),
                    started_at=datetime.now(UTC), finished_at=None, last_success_at=None, details={}))
                paused.set()
                resume.wait(timeout=60)
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 (the test inspects it)
            outcome.append(error)

    writer = threading.Thread(target=paused_write)
    writer.start()
    try:
        assert paused.wait(timeout=30)
        went_idle = time.monotonic()
        _expire()
        attempts: list[int | None] = []
        while (taken := second.acquire_lease("b", "http://b", LONG)) is None and time.monotonic() - went_idle < 30:
            attempts.append(taken)
        waited = time.monotonic() - went_idle
    finally:
        resume.set()
        writer.join(timeout=60)
    assert taken == 2
    assert attempts, "the takeover did not wait for the paused write transaction"
    assert LOCK_TIMEOUT_MS / 1000 <= waited < LOCK_TIMEOUT_MS / 1000 + 10, waited
    assert len(outcome) == 1 and isinstance(outcome[0], DatastoreUnavailable), outcome  # its commit failed
    assert second.get_run("sync", "paused") is None  # nothing of it was stored
    with pytest.raises(LeadershipLost):
        datastore.create_stack("after-resume")
    assert second.get_stack("after-resume") is None


# -- the migration and the session names ---------------------------------------------------------------------

def _schema_of(config: DatastoreConfig) -> str | None:
    return config.postgres.schema_ or None if config.datastore_type == "postgres" else None


def test_revision_0007_adds_the_lease_to_a_datastore_at_0006(datastore_config_for_backend: DatastoreConfig) -> None:
    store = open_datastore(datastore_config_for_backend, migrate=False)
    try:
        assert isinstance(store, SqlDatastore)
        schema = _schema_of(datastore_config_for_backend)
        migrate(store.engine, schema=schema, revision="0006")
        store.create_stack("kept")
        with store.engine.connect() as conn:
            assert not sa.inspect(conn).has_table("leader_lease", schema=schema)

        result = migrate(store.engine, schema=schema)
        assert (result.before, result.after) == ("0006", head_revision())

        assert store.get_stack("kept") is not None
        assert store.read_lease() is None
        assert store.acquire_lease("a", "http://a", LONG) == 1
        store.fence_writes(1)
        store.create_stack("fenced")
    finally:
        store.close()


@pytest.mark.parametrize("datastore_config_for_backend", ["postgres"], indirect=True)
def test_postgres_sessions_carry_the_agent_application_name(datastore_config_for_backend: DatastoreConfig,
                                                            postgres_server: Any) -> None:
    name = f"svc-agent-test-{time.monotonic_ns() % 10**9}"
    store = open_datastore(datastore_config_for_backend, application_name=name)
    try:
        store.create_stack("named")  # leaves a pooled session open
        with postgres_server.connect() as admin:
            row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
                                (postgres_server.database, name)).fetchone()
        assert row is not None and row[0] >= 1
    finally:
        store.close()
