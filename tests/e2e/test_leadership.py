"""Two real agents on one real PostgreSQL database: one leads, the other takes over (issue 29).

A 300-resource FAKE apply with latency runs on the leader; the leader is SIGKILLed (its lease expires), or
SIGTERMed (it hands the lease over), or paused with SIGSTOP past its lease; the follower leads and finishes the
command through crash recovery. Every resource is created exactly once (the FAKE cloud holds one item per value),
the inventory is what the cloud holds, and a paused ex-leader, resumed, writes nothing to the datastore (every
write is audited by a trigger that records the writing session's ``application_name``). Takeover times are
``bench/takeover.py``'s to report; here they are bounded generously, never timed tightly.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from support.agent_group import AgentGroup, Member, agent_group
from svc import __version__

ITEMS = 300
LATENCY = 0.1  # seconds per create: the apply lasts long enough to be interrupted


@pytest.fixture
def group(home: Path, tmp_path: Path) -> Iterator[AgentGroup]:
    with agent_group(tmp_path) as group:
        yield group


def _submit(group: AgentGroup, member: Member, path: Path) -> str:
    started = group.svc(member, "apply", str(path), "--yes", "--output-consumer", "machine")
    assert started.returncode == 0, started.stdout + started.stderr
    return json.loads(started.stdout)["CommandId"]


def _wait_creates(group: AgentGroup, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(group.cloud.calls("create")) < count:
        assert time.monotonic() < deadline, f"fewer than {count} creates reached the cloud"
        time.sleep(0.01)


def _assert_converged(group: AgentGroup, command_id: str, items: int = ITEMS) -> None:
    final = group.wait_terminal(command_id)
    unsuccessful = {u["ResourceLabel"]: u["State"] for u in final["ResourceUpdates"] if u["State"] != "Success"}
    assert (final["State"], unsuccessful) == ("Success", {})
    created = group.created_per_value()
    assert created == {f"v-{n}": 1 for n in range(items)}, "a resource was created twice, or not at all"
    leader = group.wait_leader()
    listed = group.svc(leader, "inventory", "resources", "--query", "stack:app", "--output-consumer", "machine")
    assert listed.returncode == 0, listed.stderr
    inventory = {r["NativeID"]: r["Properties"]["Value"] for r in json.loads(listed.stdout)["Resources"]}
    assert inventory == {native_id: found["properties"]["Value"]
                         for native_id, found in group.cloud.resources("FAKE::Test::Item").items()}


def test_followers_serve_reads_and_forward_submissions(group: AgentGroup) -> None:
    leader = group.wait_leader()
    follower = group.follower()
    assert follower.health() == {"Version": __version__, "Role": "follower", "AgentId": follower.agent_id,
                                 "Leader": leader.agent_id}
    status = group.svc(follower, "agent", "status", "--output-consumer", "machine")
    assert (json.loads(status.stdout)["Role"], json.loads(status.stdout)["Leader"]) == ("follower", leader.agent_id)
    # A submission sent to the follower runs on the leader; both read it back from the datastore.
    command_id = _submit(group, follower, group.forma(5))
    final = group.wait_terminal(command_id)
    assert final["State"] == "Success"
    for member in (leader, follower):
        answer = httpx.get(f"{member.agent.url}/api/v1/commands/{command_id}/status?wait=5",
                           headers={"Client-ID": "test"}).json()["Commands"][0]
        assert answer["State"] == "Success"
    assert "this agent leads" in leader.agent.output() and "this agent leads" not in follower.agent.output()
    # The follower's synchronization, discovery and plugins' changes never run: the FAKE calls are the leader's.
    listed = group.svc(follower, "inventory", "resources", "--output-consumer", "machine")
    assert len(json.loads(listed.stdout)["Resources"]) == 5


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_the_follower_takes_over_a_running_apply(group: AgentGroup, sig: signal.Signals) -> None:
    group.cloud.set_knob("latency", {"create": LATENCY})
    leader = group.wait_leader()
    command_id = _submit(group, leader, group.forma(ITEMS))
    _wait_creates(group, ITEMS // 3)
    took = group.kill(leader, sig)
    assert leader.agent.wait_exit() == (0 if sig is signal.SIGTERM else -signal.SIGKILL)
    # Generous bounds (a loaded machine is slow); bench/takeover.py reports the figures.
    assert took < (10 if sig is signal.SIGTERM else 20)
    _assert_converged(group, command_id)
    if sig is signal.SIGTERM:
        assert "handed the lease over" in leader.agent.output()


def test_twenty_alternating_kills_converge(home: Path, tmp_path: Path) -> None:
    """Twenty times: the leader (a, then b, then a…) is killed, SIGKILL and SIGTERM in turn, while creates are held
    back in the cloud (the ``hang`` knob), so that each leader makes some progress and the apply outlasts the loop;
    the killed agent is started again, as a follower."""
    items = 400
    with agent_group(tmp_path, plugin="new FAKE.PluginConfig { maxInFlight = 4 }") as group:
        group.cloud.set_knob("latency", {"create": 0.05})
        command_id = _submit(group, group.wait_leader(), group.forma(items))
        for kill in range(20):
            leader = group.wait_leader()
            made = len(group.cloud.resources("FAKE::Test::Item"))
            group.cloud.clear_knobs("hang")
            deadline = time.monotonic() + 120
            while len(group.cloud.resources("FAKE::Test::Item")) < made + 3:  # the new leader makes progress
                assert time.monotonic() < deadline, f"no progress after kill {kill}"
                time.sleep(0.01)
            group.cloud.set_knob("hang", {"ops": ["create"]})
            group.kill(leader, signal.SIGKILL if kill % 2 == 0 else signal.SIGTERM)
            group.restart(leader)
        assert len(group.cloud.resources("FAKE::Test::Item")) < items, "the apply ended before the last kill"
        group.cloud.clear_knobs("hang")
        assert [member for member, _, _ in group.kills] == ["a", "b"] * 10
        _assert_converged(group, command_id, items)


def _audit_writes(database: dict[str, object]) -> None:
    """Every write to the agents' tables records the writing session's application_name."""
    with psycopg.connect(**database, autocommit=True) as connection:
        connection.execute("CREATE TABLE write_audit (app text NOT NULL, tbl text NOT NULL, "
                           "at timestamptz NOT NULL DEFAULT clock_timestamp())")
        connection.execute("CREATE FUNCTION audit_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                           "INSERT INTO write_audit (app, tbl) VALUES (current_setting('application_name'), "
                           "TG_TABLE_NAME); RETURN NULL; END $$")
        tables = [row[0] for row in connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
            "AND tablename NOT IN ('write_audit', 'alembic_version', 'leader_lease')")]
        assert {"resources", "commands"} <= set(tables) or tables, tables
        for table in tables:
            connection.execute(f'CREATE TRIGGER audit_{table} AFTER INSERT OR UPDATE OR DELETE ON "{table}" '
                               "FOR EACH STATEMENT EXECUTE FUNCTION audit_write()")


def test_a_paused_leader_resumed_after_losing_the_lease_writes_nothing(group: AgentGroup) -> None:
    _audit_writes(group.database)
    group.cloud.set_knob("latency", {"create": LATENCY})
    paused = group.wait_leader()
    command_id = _submit(group, paused, group.forma(ITEMS))
    _wait_creates(group, ITEMS // 4)
    assert paused.agent.process is not None
    paused.agent.process.send_signal(signal.SIGSTOP)  # as a long pause (GC, a VM frozen) would
    group.wait_leader(other_than=paused)
    _wait_creates(group, ITEMS // 2)  # the new leader works
    with psycopg.connect(**group.database, autocommit=True) as connection:
        [(taken_over,)] = connection.execute("SELECT acquired_at FROM leader_lease").fetchall()
    paused.agent.process.send_signal(signal.SIGCONT)
    # It learns it lost the lease (its renewal, or its first write, finds a newer epoch) and stops at once.
    assert paused.agent.wait_exit(timeout=60) == 75
    assert "another agent took the lease over" in paused.agent.output()
    _assert_converged(group, command_id)
    with psycopg.connect(**group.database, autocommit=True) as connection:
        late = connection.execute("SELECT app, tbl, at FROM write_audit WHERE app = %s AND at >= %s",
                                  (f"svc-agent-{paused.agent_id}", taken_over)).fetchall()
        writers = {row[0] for row in connection.execute("SELECT DISTINCT app FROM write_audit")}
    assert late == []
    assert f"svc-agent-{paused.agent_id}" in writers  # the audit sees the paused agent's earlier writes


def test_a_rolling_replacement_fails_no_client_call(group: AgentGroup) -> None:
    """As ECS rolls the full-control service (minimumHealthyPercent 100, maximumPercent 200): the old task leaves
    the load balancer, drains, gets SIGTERM, and a new one takes its place; three times over, while a client
    applies and lists through the balancer without a pause."""
    from support.balancer import Balancer

    failures: list[str] = []
    calls = 0
    stop = threading.Event()

    def client_loop(url: str) -> None:
        nonlocal calls
        member = group.members[0]
        iteration = 0
        while not stop.is_set():
            iteration += 1
            applied = group.svc(member, "--api-url", url, "apply", str(group.forma(5, name=f"f{iteration}.pkl",
                                                                                     value=f"x{iteration}")),
                                "--yes", "--wait")
            listed = group.svc(member, "--api-url", url, "inventory", "resources", "--output-consumer", "machine")
            calls += 2
            for result in (applied, listed):
                if result.returncode != 0:
                    failures.append(f"{' '.join(result.args[:4])}: {result.stdout[-500:]} {result.stderr[-500:]}")

    with Balancer(health_check=True) as balancer:
        for member in group.members:
            balancer.register(member.agent.port)
        client = threading.Thread(target=client_loop, args=(balancer.url,), daemon=True)
        client.start()
        time.sleep(2)
        group.roll(balancer, 3)
        stop.set()
        client.join(timeout=180)
    assert failures == []
    assert calls >= 6
