"""Who leads: several agents may share one PostgreSQL or Aurora datastore, and one of them leads.

The leader holds the datastore's lease row (``Datastore.acquire_lease``) and renews it every
``agent.leadership.renewInterval``; it alone runs commands, plugins' changes and the background jobs
(``Engine.lead``). Every write it makes is fenced by the lease's epoch (``Datastore.fence_writes``): once another
agent took the lease over, no write of this one can land, even one begun before. The others follow: they serve
reads, forward submissions (``svc.api.forwarding``) and look every ``pollInterval`` whether the lease is free. On
SIGTERM the leader stops its commands where they are, stores what they wrote and releases the lease, so a
follower takes over at its next look; if the leader dies, its lease expires after ``leaseDuration``. The new
leader resumes the commands through crash recovery (request tokens: no cloud call runs twice).

A leader that learns another agent took its lease (it was paused, or cut from the datastore, for longer than the
lease) exits at once with ``EXIT_LEASE_LOST``: what it holds in memory is stale, and its supervisor starts it again
as a follower. An SQLite datastore serves one agent (``SoleLeader``), which always leads.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from svc.config.model import AgentConfig, LeadershipConfig
from svc.datastore import Datastore, DatastoreError
from svc.engine.errors import NotLeading

log = logging.getLogger("svc.engine.leadership")

Role = Literal["leader", "follower"]
EXIT_LEASE_LOST = 75  # EX_TEMPFAIL: start again (as a follower)


@dataclass(frozen=True)
class Leader:
    agent_id: str
    url: str


class LeadEngine(Protocol):
    """What leadership starts and stops (``svc.engine.Engine``)."""

    async def lead(self) -> None: ...

    async def stop_leading(self) -> None: ...


class Leadership(Protocol):
    """What the API asks of the agent's leadership."""

    agent_id: str

    @property
    def role(self) -> Role: ...

    def takes_submissions(self) -> bool:
        """True while this agent leads and is not handing over."""

    def leader(self) -> Leader | None:
        """The agent leading now, as last seen (None: none, or unknown)."""

    async def start(self) -> None:
        """Before the API serves: leads at once if it can."""

    async def step_down(self) -> None:
        """Hands leadership over (SIGTERM); at once, and once, however often it is asked."""

    async def close(self) -> None: ...


def advertised_url(config: AgentConfig) -> str:
    """Where followers reach this agent: ``leadership.advertiseUrl``, else this host's address and port."""
    if config.leadership.advertise_url:
        return config.leadership.advertise_url.rstrip("/")
    scheme = "https" if config.server.tls_enabled else "http"
    host = config.server.bind_address
    if host in ("", "0.0.0.0", "::"):
        try:
            host = socket.gethostbyname(socket.gethostname())
        except OSError:
            host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{config.server.port}"


class SoleLeader:
    """The agent alone on its datastore (SQLite): it leads from start to stop."""

    role: Role = "leader"

    def __init__(self, engine: LeadEngine, agent_id: str, url: str) -> None:
        self._engine = engine
        self.agent_id = agent_id
        self._url = url

    def takes_submissions(self) -> bool:
        return True

    def leader(self) -> Leader | None:
        return Leader(self.agent_id, self._url)

    async def start(self) -> None:
        await self._engine.lead()

    async def step_down(self) -> None:
        """Nothing to hand over: the API's shutdown stops the engine."""

    async def close(self) -> None:
        pass


class LeaseHolder:
    """Leadership by the datastore's lease, among agents sharing a PostgreSQL or Aurora datastore."""

    def __init__(self, engine: LeadEngine, store: Datastore, settings: LeadershipConfig, agent_id: str, url: str,
                 *, set_gate: Callable[[Callable[[], object] | None], None],
                 exit_process: Callable[[int], None] = os._exit) -> None:
        self._engine = engine
        self._store = store
        self.agent_id = agent_id
        self._url = url
        self._duration = settings.lease_duration.total_seconds()
        self._renew_every = settings.renew_interval.total_seconds()
        self._poll_every = settings.poll_interval.total_seconds()
        # A change is issued only while the lease has this much left by the local clock (which runs behind the
        # database's: a renewal's expiry is counted from before it was sent).
        self._margin = min(1.0, self._duration / 10)
        self._set_gate = set_gate
        self._exit = exit_process
        self._role: Role = "follower"
        self._epoch: int | None = None
        self._valid_until = float("-inf")  # time.monotonic() before which the lease is surely held
        self._leader: Leader | None = None
        self._handing_over = False
        self._unreachable = False  # the datastore failed the last look (logged once per outage)
        self._task: asyncio.Task[None] | None = None
        self._stepping: asyncio.Task[None] | None = None
        self._leading: asyncio.Task[None] | None = None

    @property
    def role(self) -> Role:
        return self._role

    def takes_submissions(self) -> bool:
        return self._role == "leader" and not self._handing_over

    def leader(self) -> Leader | None:
        return self._leader

    async def start(self) -> None:
        self._store.fence_writes(None)  # a follower writes nothing
        self._set_gate(self._held)
        await self._look()
        self._task = asyncio.create_task(self._keep(), name="leadership")

    async def step_down(self) -> None:
        if self._stepping is None:
            self._stepping = asyncio.create_task(self._hand_over(), name="hand over")
        await asyncio.shield(self._stepping)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    # -- the lease's life -----------------------------------------------------------------------------------------

    async def _keep(self) -> None:
        while True:
            if self._role == "leader":
                await asyncio.sleep(self._renew_every)
                if self._role == "leader" and not self._handing_over:
                    await self._renew()
            else:
                await asyncio.sleep(self._poll_every)
                if not self._handing_over:
                    await self._look()

    async def _look(self) -> None:
        """A follower's look at the lease: who leads, and the lease itself when it is free."""
        try:
            lease = await asyncio.to_thread(self._store.read_lease)
            if lease is not None and lease.holder == self.agent_id:
                # This agent's previous life (it restarted; its PID file rules out a live one on this data
                # directory): the lease need not run out first.
                await asyncio.to_thread(self._store.release_lease, self.agent_id, lease.epoch)
            elif lease is not None and lease.holder is not None and lease.remaining > 0:
                self._leader = Leader(lease.holder, lease.holder_url)
                self._reachable()
                return
            began = time.monotonic()
            epoch = await asyncio.to_thread(self._store.acquire_lease, self.agent_id, self._url, self._duration)
        except DatastoreError as error:
            self._unreachable_now(error)
            return
        self._reachable()
        if epoch is None:  # another agent was quicker
            return
        self._epoch = epoch
        self._valid_until = began + self._duration
        self._store.fence_writes(epoch, on_lost=self._lost)
        self._role = "leader"
        self._leader = Leader(self.agent_id, self._url)
        log.info("this agent leads now (lease epoch %d, %gs); resuming unfinished commands", epoch, self._duration)
        # On a task of its own: the lease is renewed meanwhile, however long resuming takes.
        self._leading = asyncio.create_task(self._engine.lead(), name="lead")
        self._leading.add_done_callback(self._led)

    def _led(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("this agent took the lease but could not resume the unfinished commands (%s); stopping, so "
                      "that another agent (or this one, started again) takes over", error)
            self._exit(1)

    async def _renew(self) -> None:
        assert self._epoch is not None
        began = time.monotonic()
        try:
            renewed = await asyncio.to_thread(self._store.renew_lease, self.agent_id, self._epoch, self._duration)
        except DatastoreError as error:
            # The lease stays ours until another agent takes it; meanwhile no change is issued once it may have
            # expired (``_held``), and the datastore refuses writes of an epoch that is no longer the lease's.
            self._unreachable_now(error)
            return
        self._reachable()
        if not renewed:
            self._lost(None)
        self._valid_until = began + self._duration

    async def _held(self) -> None:
        """Returns when this agent may issue a change to the cloud: while it surely holds the lease."""
        while time.monotonic() >= self._valid_until - self._margin:
            if self._role != "leader":
                raise NotLeading("this agent no longer leads; another agent resumes its commands")
            await asyncio.sleep(min(0.05, self._renew_every))

    async def _hand_over(self) -> None:
        if self._role != "leader" or self._epoch is None:
            return
        began = time.monotonic()
        self._handing_over = True
        if self._leading is not None:
            await asyncio.gather(self._leading, return_exceptions=True)
        await self._engine.stop_leading()  # admitted submissions end; running commands stop, their writes stored
        self._store.fence_writes(None)  # before the release: a write after it must not be taken for a lost lease
        try:
            await asyncio.to_thread(self._store.release_lease, self.agent_id, self._epoch)
        except DatastoreError as error:
            log.warning("could not release the lease (%s): another agent takes over when it expires", error)
        self._role = "follower"
        self._leader = None
        log.info("handed the lease over (epoch %d) in %.2fs", self._epoch, time.monotonic() - began)

    def _lost(self, found_epoch: int | None) -> None:
        """Another agent took the lease over: this one exits before anything it holds acts again. Called from the
        datastore's threads too (a fenced write that found another epoch). A write that began before this agent
        released its lease in a hand-over, and checked the lease after, finds its own epoch released: refused, as
        every write after the release must be, but no lease was lost, and the hand-over goes on to a clean exit
        (exiting with ``EXIT_LEASE_LOST`` told a supervisor the agent had been cut off)."""
        if self._handing_over and found_epoch is not None and found_epoch == self._epoch:
            log.info("a write begun before this agent handed the lease over (epoch %d) was refused", found_epoch)
            return
        log.error("another agent took the lease over (epoch %s; this agent held %s): stopping at once, with exit "
                  "status %d, so that nothing this agent still holds in memory acts; start it again to follow",
                  found_epoch if found_epoch is not None else "newer", self._epoch, EXIT_LEASE_LOST)
        for handler in logging.getLogger().handlers:
            handler.flush()
        self._exit(EXIT_LEASE_LOST)

    def _unreachable_now(self, error: DatastoreError) -> None:
        if not self._unreachable:
            log.warning("leadership: the datastore did not answer (%s); trying again", error)
        self._unreachable = True

    def _reachable(self) -> None:
        if self._unreachable:
            log.info("leadership: the datastore answers again")
        self._unreachable = False
