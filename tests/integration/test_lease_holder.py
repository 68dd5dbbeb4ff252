"""The leader's side of the lease (``svc.engine.leadership.LeaseHolder``) on a real datastore, its engine a stand-in
that leads and stops at once: what a hand-over leaves, and what makes the process exit."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from svc.config.model import LeadershipConfig
from svc.datastore import Datastore, LeadershipLost
from svc.engine.leadership import EXIT_LEASE_LOST, LeaseHolder


class _Engine:
    async def lead(self) -> None:
        pass

    async def stop_leading(self) -> None:
        pass


def _holder(datastore: Datastore, agent_id: str, exits: list[int]) -> LeaseHolder:
    settings = LeadershipConfig(lease_duration=timedelta(seconds=60), renew_interval=timedelta(seconds=30),
                                poll_interval=timedelta(seconds=30))
    return LeaseHolder(_Engine(), datastore, settings, agent_id, f"http://{agent_id}", set_gate=lambda gate: None,
                       exit_process=exits.append)


def test_a_write_begun_before_a_hand_over_and_checked_after_it_is_refused_without_a_lost_lease_exit(
        datastore: Datastore) -> None:
    """A write transaction that took the fence before the leader released its lease in a hand-over (SIGTERM), and
    checked the lease after, is refused; the agent goes on to its clean exit instead of saying its lease was lost
    (exit 75: a supervisor would take it for an agent cut off)."""
    exits: list[int] = []

    async def scenario() -> None:
        holder = _holder(datastore, "agent-a", exits)
        await holder.start()
        assert holder.role == "leader"
        fence = datastore.write_fence  # as a write transaction begun now holds it
        await holder.step_down()
        with pytest.raises(LeadershipLost), datastore.engine.connect() as conn, conn.begin():
            fence.check(conn)
        await holder.close()

    asyncio.run(scenario())
    assert exits == []


def test_a_lease_another_agent_took_makes_the_old_leader_exit(datastore: Datastore, second: Datastore) -> None:
    """The same refusal when another agent holds the lease at a newer epoch: the old leader exits at once."""
    exits: list[int] = []

    async def scenario() -> None:
        holder = _holder(datastore, "agent-a", exits)
        await holder.start()
        fence = datastore.write_fence
        assert datastore.release_lease("agent-a", 1) and second.acquire_lease("agent-b", "http://b", 60) == 2
        with pytest.raises(LeadershipLost), datastore.engine.connect() as conn, conn.begin():
            fence.check(conn)
        await holder.close()

    asyncio.run(scenario())
    assert exits == [EXIT_LEASE_LOST]
