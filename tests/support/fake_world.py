"""A real agent running the FAKE plugin, its FAKE cloud, and the real CLI pointed at both.

``World`` writes formas over the FAKE schema, drives ``svc`` with the agent's config, and reads what
happened from the cloud's own file (``FakeCloud``) and from the agent's API.
"""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from svc_plugin_fake.cloud import FakeCloud

from support.processes import Agent, on_demand_agent, run_svc

ENV = {"COLUMNS": "200"}
HEAD = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/net/network.pkl"
import "@fake/net/subnet.pkl"
import "@fake/test/item.pkl"
import "@fake/test/rules.pkl"

forma {{
  new svc.Target {{ label = "cloud"; config = new fake.Config {{ path = "{cloud}" }} }}
"""


@dataclass
class World:
    agent: Agent
    cloud: FakeCloud
    cloud_path: Path
    directory: Path

    @property
    def api(self) -> str:
        return f"{self.agent.url}/api/v1"

    def svc(self, *args: str, timeout: float = 120, env: dict[str, str] | None = None,
            input: str | None = None) -> Any:
        """The real CLI with this agent's config; ``env`` e.g. another data dir (another client id); ``input``
        its standard input (a pipe, never a terminal)."""
        return run_svc(*args, "--config", str(self.agent.config), env={**ENV, **(env or {})}, input=input,
                       timeout=timeout)

    def forma(self, body: str, name: str = "main.pkl", stacks: tuple[str, ...] = ("app",),
              imports: tuple[str, ...] = ()) -> Path:
        """A forma of ``body`` in ``stacks``; ``imports`` are more modules (``@fake/app/vault.pkl``)."""
        path = self.directory / name
        declared = "".join(f'  new svc.Stack {{ label = "{stack}" }}\n' for stack in stacks)
        amends, head = HEAD.format(cloud=self.cloud_path).split("\n", 1)
        more = "".join(f'import "{module}"\n' for module in imports)
        path.write_text(f"{amends}\n{more}{head}{declared}" + textwrap.indent(textwrap.dedent(body), "  ") + "}\n")
        return path

    def apply(self, path: Path, mode: str = "reconcile", *extra: str) -> Any:
        return self.svc("apply", "--mode", mode, str(path), "--yes", "--wait", *extra)

    def inventory(self, query: str = "") -> dict[str, dict[str, Any]]:
        result = self.svc("inventory", "resources", "--query", query, "--output-consumer", "machine")
        assert result.returncode == 0, result.stderr
        return {resource["Label"]: resource for resource in json.loads(result.stdout)["Resources"]}

    def cloud_labels(self, resource_type: str) -> dict[str, dict[str, Any]]:
        """The cloud's resources of a type, by native id."""
        return self.cloud.resources(resource_type)

    def command(self, command_id: str) -> dict[str, Any]:
        response = httpx.get(f"{self.api}/commands/{command_id}/status", headers={"Client-ID": "test"})
        assert response.status_code == 200, response.text
        return response.json()["Commands"][0]

    def wait_terminal(self, command_id: str, timeout: float = 60) -> dict[str, Any]:
        return until_terminal(self.command, command_id, timeout)

    def stats(self) -> dict[str, Any]:
        return httpx.get(f"{self.api}/stats").json()


def until_terminal(read: Callable[[str], dict[str, Any]], command_id: str, timeout: float) -> dict[str, Any]:
    """The command as ``read`` answers it once it is in a final state; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        command = read(command_id)
        if command["State"] in ("Success", "Failed", "Canceled"):
            return command
        time.sleep(0.1)
    raise AssertionError(f"command {command_id} not terminal after {timeout}s: {command}")


@contextmanager
def fake_world(tmp_path: Path, agent_config: str = "", datastore: str | None = None) -> Iterator[World]:
    """An agent with FAKE enabled (fast retries, no background loops); stopped afterwards.
    ``agent_config`` adds members to its ``agent`` block (e.g. ``oTel { … }``); ``datastore`` replaces its
    SQLite datastore block (``on_demand_agent``)."""
    cloud_path = tmp_path / "cloud.db"
    agent = on_demand_agent(tmp_path, "new FAKE.PluginConfig {}", members=agent_config,
                            datastore=datastore).start()
    try:
        yield World(agent, FakeCloud(cloud_path), cloud_path, tmp_path)
    finally:
        agent.stop()
        if os.environ.get("SVC_TEST_SHOW_AGENT_LOG"):
            print(agent.output())




NET_AND_SUBNET = """\
local net = new network.Network { label = "net"; cidr = "10.0.0.0/16" }
net
new subnet.Subnet { label = "sub"; networkId = net.res.networkId; cidr = "10.0.1.0/24" }
"""


def chain(*labels: str, value: str = "v", token: str = "t") -> str:
    """Items each referencing the previous one: a dependency chain in forma order."""
    lines = []
    for index, label in enumerate(labels):
        ref = f"; ref = {labels[index - 1]}.res.id" if index else ""
        lines.append(f'local {label} = new item.Item {{ label = "{label}"; value = "{value}-{label}"; '
                     f'token = "{token}"{ref} }}\n{label}\n')
    return "".join(lines)


def submit(world: World, path: Path) -> str:
    started = world.svc("apply", "--mode", "reconcile", str(path), "--yes", "--output-consumer", "machine")
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout)["CommandId"]


def wait_running(world: World, command_id: str, label: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        states = {u["ResourceLabel"]: u["State"] for u in world.command(command_id)["ResourceUpdates"]}
        if states[label] == "InProgress":
            return
        time.sleep(0.02)
    raise AssertionError(f"{label} never started: {states}")
