"""Reading commands: ``GET /commands/status`` and ``/commands/:id/status`` (Client-ID, scope, query,
max_results), and ``svc command status|list`` / ``svc status command`` with the CLI's persistent client id.
Commands are made by real applies through the FAKE plugin, by two CLI clients (two data dirs)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from support.datastores import sqlite_config
from support.fake_world import World, chain, fake_world
from support.processes import isolated_home
from svc.datastore import open_datastore
from svc.ids import new_id
from svc.model.records import CommandRecord


@dataclass
class History:
    world: World
    me: str  # the default CLI's client id
    other_env: dict[str, str]  # runs the CLI as another client
    ok: str  # my first command (Success)
    failed: str  # my second command (Failed)
    theirs: str  # the other client's command (latest)

    def get(self, path: str, client: str | None = None, **params: str) -> httpx.Response:
        headers = {"Client-ID": client} if client is not None else {}
        return httpx.get(f"{self.world.api}{path}", headers=headers, params=params)

    def ids(self, client: str | None = None, **params: str) -> list[str]:
        response = self.get("/commands/status", self.me if client is None else client, **params)
        assert response.status_code == 200, response.text
        return [command["CommandId"] for command in response.json()["Commands"]]


def command_id(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode in (0, 1), result.stderr
    [command] = json.loads(result.stdout)["Commands"]
    return command["CommandId"]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    """Three commands by two clients, and a background (sync) command that no listing may show."""
    root = tmp_path_factory.mktemp("commands")
    with isolated_home(root), fake_world(root) as world:
        other_env = {"XDG_DATA_HOME": str(root / "other-client")}
        ok = command_id(world.svc("apply", "--mode", "reconcile", str(world.forma(chain("a"))), "--yes",
                                  "--wait", "--output-consumer", "machine"))
        world.cloud.set_knob("fail", {"code": "AccessDenied", "ops": ["create"]})
        failed = command_id(world.svc("apply", "--mode", "patch", str(world.forma(chain("b"), name="b.pkl")),
                                      "--yes", "--wait", "--output-consumer", "machine"))
        world.cloud.clear_knobs()
        other_forma = world.forma(chain("c"), name="c.pkl", stacks=("other",))
        theirs = command_id(world.svc("apply", "--mode", "reconcile", str(other_forma), "--yes", "--wait",
                                      "--output-consumer", "machine", env=other_env))
        me = (root / "home" / "data" / "svc" / "cli_client_id").read_text().strip()
        store = open_datastore(sqlite_config(str(root / "svc.db")), migrate=False)
        store.put_command(CommandRecord(id=new_id(), command="sync", state="Success", source="synchronizer",
                                        start_ts=datetime.now(UTC), end_ts=datetime.now(UTC)))
        store.close()
        yield History(world, me, other_env, ok, failed, theirs)


def test_the_two_clients_have_their_own_persistent_ids(history: History) -> None:
    assert len(history.me) == 27
    assert history.ids(scope="agent", query="client:me") == [history.failed, history.ok]


def test_client_id_is_required(history: History) -> None:
    for path in ("/commands/status", f"/commands/{history.ok}/status"):
        missing = history.get(path)
        assert missing.status_code == 400 and missing.json() == {"message": "Client-ID header is required"}


def test_scope_query_and_max_results(history: History) -> None:
    assert history.ids() == [history.failed]  # no query, client scope: my latest
    assert history.ids(scope="agent") == [history.theirs, history.failed, history.ok]  # no background sync
    assert history.ids(scope="agent", max_results="2") == [history.theirs, history.failed]
    assert history.ids(query="status:Failed") == [history.failed]
    assert history.ids(query="stack:other") == [history.theirs]
    assert history.ids(query="command:apply -status:failed") == [history.theirs, history.ok]
    assert history.get("/commands/status", "never-seen").status_code == 404
    assert history.get("/commands/status", history.me, max_results="ten").status_code == 400
    assert history.get("/commands/status", history.me, scope="world").status_code == 400
    bad = history.get("/commands/status", history.me, query="colour:red")
    assert bad.status_code == 400 and bad.json()["error"] == "InvalidQueryError"


def test_a_list_of_commands_can_count_the_updates_instead_of_listing_them(history: History) -> None:
    full = history.get("/commands/status", history.me, scope="agent").json()["Commands"]
    counted = history.get("/commands/status", history.me, scope="agent", counts="true").json()["Commands"]
    assert [c["CommandId"] for c in counted] == [c["CommandId"] for c in full]
    for listed, whole in zip(counted, full, strict=True):
        assert listed["ResourceUpdates"] == [] and whole["ResourceUpdates"]
        assert listed["UpdateCounts"] == dict(Counter(u["State"] for u in whole["ResourceUpdates"]))
        assert {k: v for k, v in listed.items() if k not in ("ResourceUpdates", "UpdateCounts")} == \
            {k: v for k, v in whole.items() if k != "ResourceUpdates"}
    assert [c["UpdateCounts"] for c in counted if c["CommandId"] == history.failed] == [{"Failed": 1}]


def test_one_command_by_id_from_any_client(history: History) -> None:
    response = history.get(f"/commands/{history.failed}/status", "someone-else")
    assert response.status_code == 200
    [command] = response.json()["Commands"]
    assert (command["Command"], command["Mode"], command["State"]) == ("apply", "patch", "Failed")
    [update] = command["ResourceUpdates"]
    assert (update["ResourceLabel"], update["Operation"], update["State"]) == ("b", "create", "Failed")
    assert "AccessDenied" in update["ErrorMessage"]
    assert history.get(f"/commands/{new_id()}/status", history.me).status_code == 404


def test_cli_command_status_and_list(history: History) -> None:
    world = history.world
    latest = world.svc("command", "status", "--output-consumer", "machine")
    assert latest.returncode == 0, latest.stderr
    assert [c["CommandId"] for c in json.loads(latest.stdout)["Commands"]] == [history.failed]
    theirs = world.svc("command", "status", "--output-consumer", "machine", env=history.other_env)
    assert [c["CommandId"] for c in json.loads(theirs.stdout)["Commands"]] == [history.theirs]
    human = world.svc("command", "status", history.failed)
    assert human.returncode == 0
    assert f"apply (patch) {history.failed} Failed: 1 of 1 resource updates finished (1 Failed)" in human.stdout
    assert "AccessDenied" in human.stdout
    listed = world.svc("command", "list", "--output-consumer", "machine", "--output-schema", "yaml")
    assert listed.returncode == 0 and listed.stdout.count("CommandId:") == 3
    table = world.svc("command", "list", "--query", "status:Success")
    assert history.ok in table.stdout and history.theirs in table.stdout and history.failed not in table.stdout
    every = world.svc("command", "list").stdout  # the updates counted by the agent (counts=true), not listed
    assert [line.split()[-2:] for line in every.splitlines() if history.failed in line] == [["1", "Failed"]], every


def test_cli_deprecated_alias_and_errors(history: History) -> None:
    world = history.world
    alias = world.svc("status", "command", "--query", f"id:{history.theirs}", "--output-consumer", "machine")
    assert alias.returncode == 0 and "deprecated" in alias.stderr
    assert [c["CommandId"] for c in json.loads(alias.stdout)["Commands"]] == [history.theirs]
    as_list = world.svc("status", "command", "--query", "command:apply", "--output-consumer", "machine")
    assert len(json.loads(as_list.stdout)["Commands"]) == 3
    unknown = world.svc("command", "status", "2d0000000000000000000000000")
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == ("Error: command not found: 2d0000000000000000000000000; list the recent ones "
                                      "with: svc command list")
    bad = world.svc("command", "list", "--query", "colour:red")
    assert bad.returncode == 1
    [line] = bad.stderr.strip().splitlines()
    assert line.startswith("Error: command list refused by the agent (InvalidQueryError): invalid query:")


def test_a_client_without_commands(history: History, tmp_path: Path) -> None:
    fresh = history.world.svc("command", "status", env={"XDG_DATA_HOME": str(tmp_path / "fresh")})
    assert fresh.returncode == 0 and "This client has run no commands yet." in fresh.stdout
