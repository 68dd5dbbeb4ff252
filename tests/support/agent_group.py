"""Several real agents on one real PostgreSQL database, the FAKE plugin and its cloud: who leads, kills, restarts.

Each agent is a ``svc agent start`` process with a data directory of its own (its own agent id, PID file and
plugin processes); they share the database (a fresh one on ``$SVC_TEST_POSTGRES_URL``, dropped afterwards), the
FAKE cloud file and the sealing key. Used by ``tests/e2e/test_leadership.py`` and ``bench/takeover.py``.
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from svc_plugin_fake.cloud import FakeCloud

from support.fake_world import until_terminal
from support.processes import Agent, on_demand_agent, postgres_datastore_block, run_svc

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
# Short, so that a SIGKILL's takeover takes a second or two (the default lease is 10 s).
LEASE = "leaseDuration = 1.s; renewInterval = 200.ms; pollInterval = 100.ms"


@contextmanager
def postgres_database() -> Iterator[dict[str, Any]]:
    """A fresh database on the test server; its libpq parameters."""
    params = conninfo_to_dict(os.environ.get("SVC_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL))
    name = f"svc_lead_{secrets.token_hex(4)}"
    admin = {key: params[key] for key in ("host", "port", "user", "password", "dbname") if params.get(key)}
    with psycopg.connect(**admin, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield {**admin, "dbname": name}
    finally:
        with psycopg.connect(**admin, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _datastore_block(params: dict[str, Any]) -> str:
    fields = {"host": params.get("host", "127.0.0.1"), "port": int(params.get("port", 5432)),
              "user": params.get("user", "postgres"), "database": params["dbname"]}
    if params.get("password"):
        fields["password"] = params["password"]
    return postgres_datastore_block(fields)


@dataclass
class Member:
    """One agent of the group."""

    name: str
    agent: Agent
    directory: Path

    @property
    def alive(self) -> bool:
        return self.agent.process is not None and self.agent.process.poll() is None

    def health(self) -> dict[str, Any] | None:
        try:
            response = httpx.get(f"{self.agent.url}/api/v1/health", timeout=1)
        except httpx.HTTPError:
            return None
        return response.json() if response.status_code == 200 else None

    @property
    def agent_id(self) -> str:
        return (self.directory / "data" / "svc" / "agent_id").read_text().strip()


@dataclass
class AgentGroup:
    members: list[Member]
    cloud: FakeCloud
    cloud_path: Path
    directory: Path
    database: dict[str, Any]
    kills: list[tuple[str, str, float]] = field(default_factory=list)  # (member, signal, takeover seconds)

    def leader(self) -> Member | None:
        for member in self.members:
            if member.alive and (health := member.health()) is not None and health["Role"] == "leader":
                return member
        return None

    def wait_leader(self, timeout: float = 60, other_than: Member | None = None) -> Member:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leader = self.leader()
            if leader is not None and leader is not other_than:
                return leader
            time.sleep(0.02)
        raise AssertionError(f"no agent leads after {timeout}s:\n" + "\n".join(
            f"--- {m.name}\n{m.agent.output()[-3000:]}" for m in self.members))

    def follower(self) -> Member:
        leader = self.wait_leader()
        return next(m for m in self.members if m is not leader and m.alive)

    def kill(self, member: Member, sig: signal.Signals) -> float:
        """Sends ``sig`` to the leader ``member``, then waits for another agent to lead; the takeover's seconds."""
        assert member.agent.process is not None
        began = time.monotonic()
        member.agent.process.send_signal(sig)
        successor = self.wait_leader(other_than=member)
        took = time.monotonic() - began
        self.kills.append((member.name, sig.name, took))
        assert successor is not member
        return took

    def restart(self, member: Member) -> None:
        assert member.agent.process is not None
        member.agent.process.wait(timeout=60)
        member.agent.start()

    def roll(self, balancer: Any, rounds: int) -> None:
        """A rolling replacement behind ``balancer`` (``support.balancer``), as ECS runs one with minimumHealthyPercent
        100 and maximumPercent 200: the leader's task leaves the balancer and drains, gets SIGTERM and is replaced
        by a new one (started again here, a follower), ``rounds`` times."""
        for _ in range(rounds):
            old = self.wait_leader()
            balancer.deregister(old.agent.port, drain=True)
            self.kill(old, signal.SIGTERM)
            self.restart(old)
            balancer.register(old.agent.port)
            time.sleep(1)

    def svc(self, member: Member, *args: str, timeout: float = 120) -> Any:
        return run_svc(*args, "--config", str(member.agent.config), env={"COLUMNS": "200"}, timeout=timeout)

    def command(self, command_id: str) -> dict[str, Any]:
        """The command as any live agent reads it from the datastore."""
        for member in self.members:
            if not member.alive:
                continue
            try:
                response = httpx.get(f"{member.agent.url}/api/v1/commands/{command_id}/status",
                                     headers={"Client-ID": "test"}, timeout=10)
            except httpx.HTTPError:
                continue
            if response.status_code == 200:
                return response.json()["Commands"][0]
        raise AssertionError("no live agent answers")

    def wait_terminal(self, command_id: str, timeout: float = 180) -> dict[str, Any]:
        return until_terminal(self.command, command_id, timeout)

    def forma(self, items: int, name: str = "main.pkl", value: str = "v") -> Path:
        """``items`` independent FAKE items in stack ``app``."""
        lines = ['amends "@svc/forma.pkl"', 'import "@svc/svc.pkl"', 'import "@fake/fake.pkl"',
                 'import "@fake/test/item.pkl"', "forma {",
                 f'  new svc.Target {{ label = "cloud"; config = new fake.Config {{ path = "{self.cloud_path}" }} }}',
                 '  new svc.Stack { label = "app" }',
                 *(f'  new item.Item {{ label = "i{n:04d}"; value = "{value}-{n}" }}' for n in range(items)), "}"]
        path = self.directory / name
        path.write_text("\n".join(lines) + "\n")
        return path

    def created_per_value(self) -> dict[str, int]:
        """How many FAKE items the cloud holds with each value (``forma`` gives each item its own)."""
        counts: dict[str, int] = {}
        for found in self.cloud.resources("FAKE::Test::Item").values():
            value = found["properties"]["Value"]
            counts[value] = counts.get(value, 0) + 1
        return counts


@contextmanager
def agent_group(tmp_path: Path, size: int = 2, lease: str = LEASE, plugin: str = "new FAKE.PluginConfig {}",
                start: bool = True) -> Iterator[AgentGroup]:
    """``size`` agents (``a``, ``b``…) on one fresh PostgreSQL database; the first started leads."""
    sealing_key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    with postgres_database() as database:
        members = []
        for index in range(size):
            name = "abcdefgh"[index]
            directory = tmp_path / name
            directory.mkdir()
            agent = on_demand_agent(directory, plugin, datastore=_datastore_block(database),
                                    members=f'leadership {{ {lease} }}\nsealingKey = "{sealing_key}"',
                                    env={"XDG_DATA_HOME": str(directory / "data"),
                                         "SVC_PID_FILE": str(directory / "agent.pid")})
            members.append(Member(name, agent, directory))
        cloud_path = tmp_path / "cloud.db"
        group = AgentGroup(members, FakeCloud(cloud_path), cloud_path, tmp_path, database)
        try:
            if start:
                for member in members:
                    member.agent.start()
                    if member is members[0]:
                        group.wait_leader()
            yield group
        finally:
            for member in members:
                if member.agent.process is not None and member.agent.process.poll() is None:
                    member.agent.process.send_signal(signal.SIGCONT)
                    member.agent.stop()
            if os.environ.get("SVC_TEST_SHOW_AGENT_LOG"):
                for member in members:
                    print(f"--- {member.name}\n{member.agent.output()}")
