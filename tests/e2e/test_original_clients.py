"""The original product's clients against svc (issue 27): a real agent with the FAKE plugin, driven with exactly
the HTTP requests the original CLI and MCP server send (api-cli-config.md §1.6–1.8: a KSUID ``Client-ID`` only
where they send one, ``multipart/form-data`` with a ``forma.json`` file part and string booleans, their query
parameters), and every answer checked against the shapes those clients decode (§1.7: field names, JSON types, RFC
3339 timestamps a Go ``time.Time`` accepts).

Reads are one case table over a forma applied once; the commands that change things (apply, simulate, destroy,
cancel, reconcile) follow in order, each answer checked the same way."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.datastores import sqlite_config
from support.fake_world import World, fake_world
from svc.datastore import open_datastore
from svc.forma import evaluate_forma
from svc.ids import new_id

CLIENT = {"Client-ID": new_id()}  # the original CLI's id: a KSUID kept in its data dir
TIMEOUT = 60


# -- the shapes the original clients decode (§1.7) -------------------------------------------------------------

class Timestamp:
    """An RFC 3339 timestamp, as Go's ``time.Time`` unmarshals it (a zone is required)."""

    PATTERN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


Spec = Any  # a type, Timestamp, a dict of field → spec ("Name?" optional), or [spec] for a list of them
COUNTS = {str: int}  # map[string]int

RESOURCE_UPDATE = {"ResourceId": str, "ResourceType": str, "ResourceLabel?": str, "StackName?": str,
                   "Operation": str, "State": str, "StartedAt?": Timestamp, "Duration?": int,
                   "CurrentAttempt?": int, "MaxAttempts?": int, "ErrorMessage?": str, "Properties?": dict,
                   "OldProperties?": dict, "PatchDocument?": list, "NativeId?": str, "IsCascade?": bool}
TARGET_UPDATE = {"TargetLabel": str, "Operation": str, "State": str, "Discoverable": bool, "StartTs?": Timestamp,
                 "ModifiedTs?": Timestamp}
STACK_UPDATE = {"StackLabel": str, "Operation": str, "State": str, "Description?": str}
POLICY_UPDATE = {"PolicyLabel": str, "PolicyType": str, "Operation": str, "State": str, "StackLabel?": str}
COMMAND = {"CommandId": str, "Command": str, "Mode?": str, "State": str, "StartTs": Timestamp,
           "EndTs?": Timestamp, "ResourceUpdates?": [RESOURCE_UPDATE], "TargetUpdates?": [TARGET_UPDATE],
           "StackUpdates?": [STACK_UPDATE], "PolicyUpdates?": [POLICY_UPDATE]}
COMMANDS = {"Commands": [COMMAND]}
SUBMIT = {"CommandId": str, "Description": {"Text?": str, "Confirm?": bool},
          "Simulation": {"ChangesRequired": bool, "Command?": {"CommandId?": str, "Command?": str, "State?": str,
                                                             "ResourceUpdates?": [RESOURCE_UPDATE]},
                         "Warnings?": [str]}}
FIELD_HINT = {"CreateOnly": bool, "WriteOnly": bool, "Required": bool, "RequiredOnCreate": bool,
              "RequiredOnUpdate": bool, "HasProviderDefault": bool, "Opaque": bool, "AttachesTo": bool, "EdgeKind": str,
              "IndexField": str, "UpdateMethod": str, "Format": str}
SCHEMA = {"Identifier": str, "Fields": [str], "Hints?": {str: FIELD_HINT}, "Discoverable": bool, "Extractable": bool,
          "Portable": bool, "Parent": str, "ParentMappings": [{"parentProperty": str, "childProperty": str}]}
RESOURCE = {"Label": str, "Type": str, "Stack": str, "Target": str, "Schema": SCHEMA, "Properties": dict,
            "ReadOnlyProperties?": dict, "NativeID?": str, "Managed?": bool, "Ksuid?": str}
REAPING = {"Kind": str, "MaxUnreachableSeconds?": int}
TARGET = {"Label": str, "Namespace": str, "Config?": dict, "Discoverable": bool, "Reaping?": REAPING}
POLICY_VIEW = {"Type": str, "Label?": str, "TTLSeconds?": int, "IntervalSeconds?": int, "OnDependents?": str}
STACK = {"ID?": str, "Label": str, "Description?": str, "CreatedAt": Timestamp, "Policies?": [POLICY_VIEW]}
# In a forma a stack refers to a standalone policy as {"$ref": "policy://<label>"}, listed in full in Policies.
FORMA = {"Description": dict, "Stacks?": [{**STACK, "Policies?": [dict]}], "Targets?": [TARGET],
         "Resources?": [RESOURCE], "Policies?": [POLICY_VIEW]}
SUMMARY = {"Label": str, "Stack": str, "Type": str, "NativeID?": str, "Ksuid?": str}
POLICY = {"Label": str, "Type": str, "Config": dict, "AttachedStacks?": [str]}
DRIFT = {"ModifiedResources": [{"Stack": str, "Type": str, "Label": str, "Operation": str,
                                "PatchDocument?": list, "Properties?": dict, "OldProperties?": dict}]}
PLUGIN_INFO = {"Namespace": str, "Version": str, "NodeName": str, "MaxRequestsPerSecond": int, "ResourceCount": int,
               "ResourceTypesToDiscover?": [str], "RetryConfig?": {"StatusCheckInterval": int, "MaxRetries": int,
                                                                   "RetryDelay": int}}
STATS = {"Version": str, "AgentId": str, "Clients": int, "Commands": COUNTS, "States": COUNTS, "Stacks": int,
         "Resources": COUNTS, "UnmanagedResources": COUNTS, "Targets": COUNTS, "ResourceTypes": COUNTS,
         "Plugins": [PLUGIN_INFO], "ReapPendingTargets": int, "ReapedTargets": int, "Role?": str,
         "Leader?": str}
CANCEL = {"CommandIds": [str], "ResourceUpdateStates?": {str: {"State": str, "ForceCanceled?": bool,
                                                                "CommandId?": str}}, "Forced?": bool}
MESSAGE = {"message": str}
HEALTH = {"Version": str, "Role": str, "AgentId": str, "Leader?": str}
NOT_FOUND = {"error": str}


def problems(value: Any, spec: Spec, where: str = "$") -> list[str]:
    """What in ``value`` a client decoding ``spec`` would fail on (or silently miss): wrong JSON types, missing
    required fields."""
    if spec is Timestamp:
        ok = isinstance(value, str) and Timestamp.PATTERN.match(value)
        return [] if ok else [f"{where}: {value!r} is not an RFC 3339 timestamp"]
    if isinstance(spec, list):
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [p for i, item in enumerate(value) for p in problems(item, spec[0], f"{where}[{i}]")]
    if isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) is str:  # map[string]T
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        inner = next(iter(spec.values()))
        return [p for key, item in value.items() for p in problems(item, inner, f"{where}.{key}")]
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        found = []
        for name, inner in spec.items():
            key = name.rstrip("?")
            if key not in value or value[key] is None:
                if not name.endswith("?"):
                    found.append(f"{where}.{key}: missing")
                continue
            found += problems(value[key], inner, f"{where}.{key}")
        return found
    if spec is int and (isinstance(value, bool) or not isinstance(value, int)):
        return [f"{where}: {value!r} is not an integer"]
    if not isinstance(value, spec):
        return [f"{where}: {value!r} is not a {spec.__name__}"]
    return []


def check(response: httpx.Response, status: int, spec: Spec) -> Any:
    assert response.status_code == status, f"{response.request.method} {response.request.url}: " \
                                           f"{response.status_code} {response.text[:500]}"
    body = response.json() if response.content else None
    if spec is not None:
        assert problems(body, spec) == [], (response.request.url, body)
    return body


# -- the requests as the original clients make them ------------------------------------------------------------

@dataclass
class Clients:
    world: World
    applied: dict[str, Any] = field(default_factory=dict)  # the first apply's command

    @property
    def api(self) -> str:
        return self.world.api

    def get(self, path: str, *, client_id: bool = False, **params: str) -> httpx.Response:
        return httpx.get(f"{self.api}{path}", params=params, headers=CLIENT if client_id else {}, timeout=TIMEOUT)

    def post(self, path: str, *, client_id: bool = False, **params: str) -> httpx.Response:
        return httpx.post(f"{self.api}{path}", params=params, headers=CLIENT if client_id else {}, timeout=TIMEOUT)

    def submit(self, command: str, forma: Path | dict[str, Any] | None = None, *,
               headers: dict[str, str] | None = None, **fields: str) -> httpx.Response:
        """``POST /commands`` as the CLI's ``SubmitCommand``: a multipart body of form fields, and the forma (a
        file evaluated as the CLI evaluates it, or its JSON) as a file part when there is one."""
        parts: list[tuple[str, tuple[str | None, bytes, str | None]]] = [
            (name, (None, value.encode(), None)) for name, value in {"command": command, **fields}.items()]
        if isinstance(forma, Path):
            forma = evaluate_forma(forma, command=command, mode=fields.get("mode", "reconcile")).to_json()
        if forma is not None:
            parts.append(("file", ("forma.json", json.dumps(forma).encode(), "application/octet-stream")))
        return httpx.post(f"{self.api}/commands", files=parts, headers=CLIENT if headers is None else headers,
                          timeout=TIMEOUT)

    def apply(self, forma: Path, *, simulate: bool = False) -> httpx.Response:
        return self.submit("apply", forma, mode="reconcile", simulate=str(simulate).lower(), force="false")

    def status(self, command_id: str) -> dict[str, Any]:
        """The command as ``svc command status --query id:<id>`` reads it."""
        body = check(self.get("/commands/status", client_id=True, query=f"id:{command_id}", max_results="1"),
                     200, COMMANDS)
        [command] = body["Commands"]
        return command

    def finished(self, command_id: str) -> dict[str, Any]:
        """Polled as the CLI's watch does, until the command is terminal."""
        deadline = time.monotonic() + TIMEOUT
        while (command := self.status(command_id))["State"] not in ("Success", "Failed", "Canceled"):
            assert time.monotonic() < deadline, command
            time.sleep(0.1)
        return command


FORMA_TEXT = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/test/item.pkl"

forma {
  local keep = new svc.TTLPolicy { label = "keep"; ttl = 24.h }
  keep
  new svc.Target {
    label = "cloud"
    config = new fake.Config { path = "%(cloud)s" }
    reap = new svc.ReapAfter { maxUnreachable = 2.h }
  }
  new svc.Stack { label = "app"; policies { new svc.AutoReconcilePolicy { interval = 1.h }; keep.res } }
%(stacks)s%(items)s}
"""


def write_forma(world: World, name: str, *items: tuple[str, str, str]) -> Path:
    """A forma of FAKE items (label, value, stack) on the target ``cloud``, declaring their stacks (``app``
    always)."""
    lines = "".join(f'  new item.Item {{ label = "{label}"; value = "{value}"; stack = "{stack}" }}\n'
                    for label, value, stack in items)
    stacks = "".join(f'  new svc.Stack {{ label = "{stack}" }}\n' for stack in sorted({s for *_, s in items} - {"app"}))
    path = world.directory / name
    path.write_text(FORMA_TEXT % {"cloud": world.cloud_path, "stacks": stacks, "items": lines})
    return path


BASE = (("a", "1", "app"), ("b", "2", "app"), ("c", "3", "plain"))


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clients]:
    directory = tmp_path_factory.mktemp("original-clients")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HOME", str(directory / "home"))
        env.setenv("XDG_DATA_HOME", str(directory / "home" / "data"))
        env.setenv("SVC_PID_FILE", str(directory / "agent.pid"))
        with fake_world(directory) as world:
            clients = Clients(world)
            started = check(clients.apply(write_forma(world, "base.pkl", *BASE)), 202, SUBMIT)
            clients.applied = clients.finished(started["CommandId"])
            assert clients.applied["State"] == "Success", clients.applied
            yield clients


# -- reads: one table ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Read:
    name: str
    method: str
    path: str
    status: int
    spec: Spec
    params: dict[str, str] = field(default_factory=dict)
    client_id: bool = False


def applied_id(c: Clients) -> str:
    return str(c.applied["CommandId"])


def a_ksuid(c: Clients) -> str:
    return str(c.applied["ResourceUpdates"][0]["ResourceId"])


READS = [
    Read("health (WaitOnAvailable)", "GET", "/health", 200, None),
    Read("stats (every command's preflight, agent status)", "GET", "/stats", 200, STATS),
    Read("command status by id query", "GET", "/commands/status", 200, COMMANDS,
         {"query": "id:{applied}", "max_results": "1"}, client_id=True),
    Read("command status by path", "GET", "/commands/{applied}/status", 200, COMMANDS, client_id=True),
    Read("command list (agent scope)", "GET", "/commands/status", 200, COMMANDS,
         {"scope": "agent", "max_results": "50"}, client_id=True),
    Read("this client's latest command", "GET", "/commands/status", 200, COMMANDS, client_id=True),
    Read("command query by stack and status", "GET", "/commands/status", 200, COMMANDS,
         {"query": "stack:app status:Success command:apply", "max_results": "10"}, client_id=True),
    Read("command status without Client-ID", "GET", "/commands/status", 400, MESSAGE),
    Read("command status of an unknown id", "GET", "/commands/status", 404, MESSAGE,
         {"query": "id:2ABCDEFGHIJKLMNOPQRSTUVWXY0", "max_results": "1"}, client_id=True),
    Read("command query in error", "GET", "/commands/status", 400, {"error": str, "data": {"Reason": str}},
         {"query": "nofield"}, client_id=True),
    Read("inventory resources (extract)", "GET", "/resources", 200, FORMA, {"query": "stack:app"}),
    Read("inventory resources by type", "GET", "/resources", 200, FORMA, {"query": "type:FAKE::Test::Item"}),
    Read("inventory resources, none", "GET", "/resources", 404, NOT_FOUND, {"query": "stack:nothing-here"}),
    Read("inventory summary", "GET", "/resources/summary", 200, [SUMMARY], {"query": "managed:true"}),
    Read("inventory summary, none", "GET", "/resources/summary", 200, [SUMMARY], {"query": "stack:nothing-here"}),
    Read("resource by ksuid", "GET", "/resources/by-ksuid/{ksuid}", 200, RESOURCE),
    Read("resource by an unknown ksuid", "GET", "/resources/by-ksuid/2ABCDEFGHIJKLMNOPQRSTUVWXY0", 404, NOT_FOUND),
    Read("resource by a malformed ksuid", "GET", "/resources/by-ksuid/nope", 400, MESSAGE),
    Read("stacks", "GET", "/stacks", 200, [STACK]),
    Read("targets", "GET", "/targets", 200, [TARGET], {"query": "label:cloud namespace:FAKE"}),
    Read("targets, none", "GET", "/targets", 404, NOT_FOUND, {"query": "label:nope"}),
    Read("policies", "GET", "/policies", 200, [POLICY]),
    Read("drift (MCP)", "GET", "/stacks/app/changes-since-last-reconcile", 200, DRIFT),
    Read("drift", "GET", "/stacks/app/drift", 200, DRIFT),
    Read("admin synchronize", "POST", "/admin/synchronize", 200, None),
    Read("admin discover", "POST", "/admin/discover", 200, None),
    Read("admin reap", "POST", "/admin/reap", 200, None),
    Read("admin check-ttl (MCP)", "POST", "/admin/check-ttl", 200, {"expired_stacks": [str], "command_ids?": [str]}),
    Read("reconcile, no drift, no Client-ID (MCP)", "POST", "/stacks/app/reconcile", 200, MESSAGE),
    Read("reconcile a stack without the policy", "POST", "/stacks/plain/reconcile", 403,
         {"error": str, "data": {"StackLabel": str}}),
]


@pytest.mark.parametrize("case", READS, ids=[case.name for case in READS])
def test_read(clients: Clients, case: Read) -> None:
    def fill(text: str) -> str:
        return text.replace("{applied}", applied_id(clients)).replace("{ksuid}", a_ksuid(clients))

    params = {name: fill(value) for name, value in case.params.items()}
    call = clients.get if case.method == "GET" else clients.post
    check(call(fill(case.path), client_id=case.client_id, **params), case.status, case.spec)


def test_answers_hold_what_the_clients_read(clients: Clients) -> None:
    """Beyond types: the values the clients show or branch on."""
    stats = check(clients.get("/stats"), 200, STATS)
    [plugin] = stats["Plugins"]
    assert plugin["Namespace"] == "FAKE" and plugin["NodeName"] and plugin["ResourceCount"] == 3
    assert (stats["Stacks"], stats["Targets"], stats["ReapPendingTargets"], stats["ReapedTargets"]) == (
        2, {"FAKE": 1}, 0, 0)
    [target] = check(clients.get("/targets", query="label:cloud"), 200, [TARGET])
    assert target["Reaping"] == {"Kind": "after", "MaxUnreachableSeconds": 7200}
    stacks = {s["Label"]: s for s in check(clients.get("/stacks"), 200, [STACK])}
    assert {p["Type"] for p in stacks["app"]["Policies"]} == {"auto-reconcile", "ttl"}
    [policy] = check(clients.get("/policies"), 200, [POLICY])
    assert (policy["Label"], policy["Type"], policy["AttachedStacks"]) == ("keep", "ttl", ["app"])
    refused = check(clients.post("/stacks/plain/reconcile"), 403, None)
    assert (refused["error"], refused["data"]) == ("ReconcilePolicyRequired", {"StackLabel": "plain"})
    assert check(clients.post("/stacks/app/reconcile"), 200, MESSAGE) == {"message": "no drift detected"}
    assert check(clients.get("/commands/status"), 400, MESSAGE) == {"message": "Client-ID header is required"}
    latest = check(clients.get("/commands/status", client_id=True), 200, COMMANDS)["Commands"]
    assert [c["CommandId"] for c in latest] == [applied_id(clients)]
    summary = check(clients.get("/resources/summary", query="stack:app"), 200, [SUMMARY])
    assert sorted(row["Label"] for row in summary) == ["a", "b"]
    # The reference answers null; svc names the agent's role (Go clients read only the status).
    assert check(clients.get("/health"), 200, HEALTH)["Role"] == "leader"


# -- commands that change things, in order ---------------------------------------------------------------------

def test_simulate_apply_then_destroy(clients: Clients) -> None:
    world = clients.world
    grown = write_forma(world, "grown.pkl", *BASE, ("d", "4", "app"))
    simulated = check(clients.apply(grown, simulate=True), 200, SUBMIT)
    assert simulated["Simulation"]["ChangesRequired"] is True
    assert [u["Operation"] for u in simulated["Simulation"]["Command"]["ResourceUpdates"]] == ["create"]
    unchanged = check(clients.apply(write_forma(world, "same.pkl", *BASE), simulate=True), 200, SUBMIT)
    assert unchanged["Simulation"]["ChangesRequired"] is False

    response = clients.apply(grown)
    submitted = check(response, 202, SUBMIT)
    assert response.headers["Location"] == f"/api/v1/commands/{submitted['CommandId']}/status"
    done = clients.finished(submitted["CommandId"])
    assert (done["Command"], done["Mode"], done["State"]) == ("apply", "reconcile", "Success")
    assert check(clients.get(f"/commands/{submitted['CommandId']}/status", client_id=True), 200, COMMANDS)

    by_query = check(clients.submit("destroy", simulate="false", query="label:d stack:app",
                                    **{"on-dependents": "abort"}), 202, SUBMIT)
    assert clients.finished(by_query["CommandId"])["State"] == "Success"
    plain = write_forma(world, "plain.pkl", ("c", "3", "plain"))
    by_forma = check(clients.submit("destroy", plain, simulate="false", **{"on-dependents": "abort"}), 202, SUBMIT)
    destroyed = clients.finished(by_forma["CommandId"])
    assert [(u["ResourceLabel"], u["Operation"]) for u in destroyed["ResourceUpdates"]] == [("c", "delete")]
    without_id = clients.submit("apply", grown, headers={}, mode="reconcile", simulate="true")
    assert check(without_id, 400, MESSAGE) == {"message": "Client-ID header is required"}
    missing_file = clients.submit("apply", None, mode="reconcile", simulate="false")
    check(missing_file, 400, MESSAGE)


def test_cancel(clients: Clients) -> None:
    world = clients.world
    nothing = clients.post("/commands/cancel", client_id=True)
    assert (nothing.status_code, nothing.content) == (404, b"")
    world.cloud.set_knob("hang", {"ops": ["create"]})
    try:
        started = check(clients.apply(write_forma(world, "slow.pkl", *BASE[:2], ("e", "5", "app"))), 202, SUBMIT)
        canceled = check(clients.post("/commands/cancel", client_id=True, query=f"id:{started['CommandId']}"),
                         202, CANCEL)
        assert canceled["CommandIds"] == [started["CommandId"]]
    finally:
        world.cloud.clear_knobs("hang")
    assert clients.finished(started["CommandId"])["State"] in ("Canceled", "Success")


def test_reconcile_reverts_drift_without_a_client_id(clients: Clients) -> None:
    world = clients.world
    [native] = [n for n, r in world.cloud.resources().items() if r["properties"].get("Value") == "1"]
    world.cloud.set_property(native, "Value", "changed by hand")
    check(clients.post("/admin/synchronize"), 200, None)
    drift = check(clients.get("/stacks/app/changes-since-last-reconcile"), 200, DRIFT)
    assert ("a", "update") in [(m["Label"], m["Operation"]) for m in drift["ModifiedResources"]]
    started = check(clients.post("/stacks/app/reconcile"), 202, {"command_id": str})
    assert clients.finished(started["command_id"])["State"] == "Success"
    assert world.cloud.resources()[native]["properties"]["Value"] == "1"


def test_a_reaped_target_is_refused_until_declared_again(clients: Clients) -> None:
    """The target reaped as the reaper does it (staged in the agent's datastore with a clock of its own: a real
    one would take hours), then the answers the clients get about it."""
    world = clients.world
    store = open_datastore(sqlite_config(str(world.directory / "svc.db")),
        migrate=False)
    try:
        target = store.get_target("cloud")
        assert target is not None
        start = datetime.now(UTC) + timedelta(minutes=1)  # after every observation the agent made itself
        for step in range(3):
            assert store.observe_target("cloud", reachable=False, at=start + timedelta(seconds=30 * step), max_gap=60,
                                        error_code="NetworkFailure")
        assert store.reap_target("cloud", target.incarnation_id, threshold=60, at=start + timedelta(seconds=61))
    finally:
        store.close()
    stats = check(clients.get("/stats"), 200, STATS)
    assert (stats["ReapedTargets"], stats["ReapPendingTargets"], stats["Targets"]) == (1, 0, {})
    check(clients.get("/targets", query="label:cloud"), 404, NOT_FOUND)
    check(clients.get("/resources", query="stack:app"), 404, NOT_FOUND)

    declared = write_forma(world, "again.pkl", *BASE[:2])
    undeclared = {**evaluate_forma(declared, command="apply", mode="reconcile").to_json(), "Targets": []}
    refused = check(clients.submit("apply", undeclared, mode="reconcile", simulate="false", force="false"), 409,
                    {"error": str, "data": {"TargetLabels": [str]}})
    assert (refused["error"], refused["data"]) == ("TargetReaped", {"TargetLabels": ["cloud"]})

    recovered = check(clients.apply(declared), 202, SUBMIT)
    assert clients.finished(recovered["CommandId"])["State"] == "Success"
    forma = check(clients.get("/resources", query="stack:app"), 200, FORMA)
    assert sorted(r["Label"] for r in forma["Resources"]) == ["a", "b"]
    stats = check(clients.get("/stats"), 200, STATS)
    assert (stats["ReapedTargets"], stats["Targets"]) == (0, {"FAKE": 1})
