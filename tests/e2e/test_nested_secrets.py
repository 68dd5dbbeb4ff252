"""Secrets below the top level, through a real agent, the FAKE plugin and the real CLI.

A ``FAKE::App::Vault`` holds secrets typed ``String | svc.SecretValue`` (or its alias) in a sub-resource, in a
nested sub-resource, in a listing of sub-resources, in a mapping of sub-resources and as a mapping's values,
given as plain strings. Each reaches the cloud as itself; the agent keeps it only hashed: not in the datastore,
its log, its data directory, an API answer or the CLI's output, through apply, re-apply, update, sync, drift,
extract and discovery, and a resource that refers to one keeps it hashed too; an unchanged secret plans
nothing and a changed one plans an update.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx

from support.fake_world import World
from support.secrets_scan import assert_nowhere, files_holding
from svc.model.values import hashed_secret

VAULT = "FAKE::App::Vault"
IMPORTS = ("@fake/app/vault.pkl",)
SECRETS = {"db": "db-pw-6c1f0e", "replica": "replica-pw-93ad27", "token": "user-token-4be8d1",
           "route": "route-key-d07a55", "env": "env-secret-1f9c3e"}


def vault_body(secrets: dict[str, str]) -> str:
    return f'''\
local app = new vault.Vault {{
  label = "vault"
  name = "app"
  database {{
    host = "db.internal"
    password = "{secrets["db"]}"
    replica {{ host = "replica.internal"; password = "{secrets["replica"]}" }}
  }}
  users {{ new {{ name = "alice"; token = "{secrets["token"]}" }} new {{ name = "bob" }} }}
  routes {{ ["api"] {{ target = "10.0.0.1"; key = "{secrets["route"]}" }} ["web"] {{ target = "10.0.0.2" }} }}
  env {{ ["DB_URL"] = "{secrets["env"]}" }}
}}
app
'''


# A reference to a nested secret: the consumer is sent the secret itself and keeps it only hashed too.
CONSUMER = 'new item.Item { label = "consumer"; ref = app.res.database.at("Password") }\n'


class Answers:
    """What the agent's API and the CLI answered, to look for secrets in."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.texts: list[str] = []

    def svc(self, *args: str) -> Any:
        result = self.world.svc(*args)
        self.texts += [result.stdout, result.stderr]
        return result

    def get(self, path: str, **params: str) -> httpx.Response:
        response = httpx.get(f"{self.world.api}{path}", params=params, headers={"Client-ID": "test"}, timeout=60)
        self.texts.append(response.text)
        return response

    def post(self, path: str) -> httpx.Response:
        response = httpx.post(f"{self.world.api}{path}", timeout=120)
        self.texts.append(response.text)
        return response

    def apply(self, path: Path, *extra: str) -> Any:
        return self.svc("apply", "--mode", "reconcile", str(path), "--yes", "--wait", *extra)

    def simulate(self, path: Path) -> dict[str, Any]:
        result = self.svc("apply", "--mode", "reconcile", str(path), "--simulate", "--output-consumer", "machine")
        assert result.returncode == 0, result.stdout + result.stderr
        return json.loads(result.stdout)

    def every_record(self) -> None:
        """The inventory and every command's record, as the CLI and the API show them."""
        self.svc("inventory", "resources", "--output-consumer", "machine")
        listed = self.svc("command", "list", "--output-consumer", "machine")
        assert listed.returncode == 0, listed.stderr
        for command in json.loads(listed.stdout)["Commands"]:
            self.svc("command", "status", command["CommandId"], "--output-consumer", "machine")
            self.get(f"/commands/{command['CommandId']}/status")
        self.get("/resources", query="")


def the_vault(world: World) -> tuple[str, dict[str, Any]]:
    [(native_id, found)] = world.cloud_labels(VAULT).items()
    return native_id, found["properties"]


def hashed(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$hashed") is True


def assert_kept_hashed(world: World, answers: Answers, secrets: list[str]) -> None:
    answers.every_record()
    log = world.agent.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    for secret in secrets:
        assert_nowhere(secret, world.directory, answers.texts, stand_ins=[world.cloud_path])


def test_nested_secrets_are_sent_as_themselves_stored_hashed_and_compared_by_hash(world: World) -> None:
    answers = Answers(world)
    forma = world.forma(vault_body(SECRETS) + CONSUMER, imports=IMPORTS)
    created = answers.apply(forma)
    assert created.returncode == 0, created.stdout + created.stderr
    _, cloud = the_vault(world)  # the plugin was given each secret itself
    assert cloud["Database"]["Password"] == SECRETS["db"]
    assert cloud["Database"]["Replica"]["Password"] == SECRETS["replica"]
    assert cloud["Users"][0]["Token"] == SECRETS["token"] and cloud["Routes"]["api"]["Key"] == SECRETS["route"]
    assert cloud["Env"] == {"DB_URL": SECRETS["env"]}
    [(_, consumer)] = world.cloud_labels("FAKE::Test::Item").items()
    assert consumer["properties"]["Ref"] == SECRETS["db"]

    stored = answers.get("/resources", query="type:FAKE::App::Vault").json()["Resources"][0]["Properties"]
    assert hashed(stored["Database"]["Password"]) and hashed(stored["Database"]["Replica"]["Password"])
    assert hashed(stored["Users"][0]["Token"]) and hashed(stored["Routes"]["api"]["Key"])
    assert hashed(stored["Env"]["DB_URL"])
    assert stored["Database"]["Host"] == "db.internal" and stored["Routes"]["web"] == {"Target": "10.0.0.2"}

    assert answers.simulate(forma)["ChangesRequired"] is False  # unchanged secrets compare by their hashes
    again = answers.apply(forma)
    assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr

    changed = {**SECRETS, "route": "route-key-rotated-7e21"}
    rotated = world.forma(vault_body(changed) + CONSUMER, name="rotated.pkl", imports=IMPORTS)
    plan = answers.simulate(rotated)
    assert plan["ChangesRequired"] is True
    [update] = plan["Command"]["ResourceUpdates"]
    assert update["Operation"] == "update" and update["ResourceLabel"] == "vault"
    applied = answers.apply(rotated)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert the_vault(world)[1]["Routes"]["api"]["Key"] == changed["route"]
    assert answers.simulate(rotated)["ChangesRequired"] is False

    assert_kept_hashed(world, answers, [*SECRETS.values(), changed["route"]])


def test_sync_drift_extract_and_discovery_keep_nested_secrets_hashed(world: World) -> None:
    answers = Answers(world)
    forma = world.forma(vault_body(SECRETS), imports=IMPORTS)
    assert answers.apply(forma).returncode == 0

    # A read-back returns every secret in plain text: a synchronization that finds nothing changed stores nothing.
    synced = answers.post("/admin/synchronize")
    assert synced.status_code == 200, synced.text
    assert answers.get("/stacks/app/drift").json() == {"ModifiedResources": []}

    # Out of band: the database password changed; sync stores it (hashed) and the drift lists it.
    native_id, cloud = the_vault(world)
    edited = "db-pw-changed-by-hand-5a0b"
    world.cloud.set_property(native_id, "Database", {**cloud["Database"], "Password": edited})
    assert answers.post("/admin/synchronize").status_code == 200
    drift = answers.get("/stacks/app/drift")
    assert drift.status_code == 200, drift.text
    [modified] = drift.json()["ModifiedResources"]
    assert modified["Label"] == "vault" and hashed(modified["Properties"]["Database"]["Password"])
    [op] = modified["PatchDocument"]
    assert op["path"] in ("/Database", "/Database/Password") and edited not in json.dumps(op)
    refused = answers.apply(forma)  # the drift gate shows the change, not the secret
    assert refused.returncode == 1 and "(sensitive)" in refused.stdout, refused.stdout + refused.stderr

    # Extract writes each nested secret as its hash; applying the extraction changes nothing.
    extracted = world.directory / "extracted.pkl"
    result = answers.svc("extract", "--query", "stack:app", str(extracted))
    assert result.returncode == 0, result.stdout + result.stderr
    text = extracted.read_text()
    assert text.count("svc.hashedSecret(") == len(SECRETS), text
    for where in ("vault.database.password", "vault.database.replica.password", "vault.users[0].token",
                  'vault.routes["api"].key', 'vault.env["DB_URL"]'):
        assert where in result.stderr, result.stderr
    assert answers.simulate(extracted)["ChangesRequired"] is False, text
    answers.texts.append(text)  # scanned as an answer: the extracted file is a forma (.pkl), which scans skip

    # Discovery: a vault made outside svc is stored with its secrets hashed.
    found = "disc-pw-0f3b6e"
    world.cloud.put(VAULT, "vault-out", {"VaultId": "vault-out", "Name": "outside",
                                         "Database": {"Host": "h", "Password": found},
                                         "Users": [{"Name": "u", "Token": found + "-token"}],
                                         "Routes": {"r": {"Target": "t", "Key": found + "-route"}},
                                         "Env": {"K": found + "-env"}})
    assert answers.post("/admin/discover").status_code == 200
    [discovered] = answers.get("/resources", query="stack:$unmanaged").json()["Resources"]
    assert discovered["NativeID"] == "vault-out" and hashed(discovered["Properties"]["Database"]["Password"])

    # Adopting it with the same secrets changes no property (a write without a plugin call), and keeps each
    # secret's hash as it is: the next apply plans nothing.
    adopt = world.forma(f'''\
new vault.Vault {{
  label = "{discovered["Label"]}"
  name = "outside"
  database {{ host = "h"; password = "{found}" }}
  users {{ new {{ name = "u"; token = "{found}-token" }} }}
  routes {{ ["r"] {{ target = "t"; key = "{found}-route" }} }}
  env {{ ["K"] = "{found}-env" }}
}}
''', name="adopt.pkl", imports=IMPORTS)
    adopted = answers.svc("apply", "--mode", "patch", str(adopt), "--yes", "--wait")
    assert adopted.returncode == 0 and "brought under management" in adopted.stdout, adopted.stdout + adopted.stderr
    again = answers.svc("apply", "--mode", "patch", str(adopt), "--simulate", "--output-consumer", "machine")
    assert json.loads(again.stdout)["ChangesRequired"] is False, again.stdout

    assert_kept_hashed(world, answers, [*SECRETS.values(), edited, found])


# A reference to the whole object that holds a secret: the consumer is sent the object itself and keeps it
# hashed whole, in a form the planner can recompute from the producer's stored state.
WHOLE = 'new item.Item { label = "whole"; ref = app.res.database }\n'


def test_a_reference_to_an_object_holding_secrets_converges_and_follows_the_secrets(world: World) -> None:
    answers = Answers(world)
    forma = world.forma(vault_body(SECRETS) + WHOLE, imports=IMPORTS)
    assert answers.apply(forma).returncode == 0
    [(_, consumer)] = world.cloud_labels("FAKE::Test::Item").items()
    assert consumer["properties"]["Ref"]["Replica"]["Password"] == SECRETS["replica"]
    [kept] = answers.get("/resources", query="type:FAKE::Test::Item").json()["Resources"]
    assert hashed(kept["Properties"]["Ref"])

    assert answers.simulate(forma)["ChangesRequired"] is False  # before: an update each apply
    assert answers.post("/admin/synchronize").status_code == 200  # a read-back of the object is no drift
    assert answers.get("/stacks/app/drift").json() == {"ModifiedResources": []}
    assert answers.simulate(forma)["ChangesRequired"] is False

    changed = {**SECRETS, "replica": "replica-pw-rotated-41c2"}
    rotated = world.forma(vault_body(changed) + WHOLE, name="rotated.pkl", imports=IMPORTS)
    plan = answers.simulate(rotated)
    assert sorted(u["ResourceLabel"] for u in plan["Command"]["ResourceUpdates"]) == ["vault", "whole"]
    assert answers.apply(rotated).returncode == 0
    [(_, consumer)] = world.cloud_labels("FAKE::Test::Item").items()
    assert consumer["properties"]["Ref"]["Replica"]["Password"] == changed["replica"]
    assert answers.simulate(rotated)["ChangesRequired"] is False

    assert_kept_hashed(world, answers, [*SECRETS.values(), changed["replica"]])


# What svc kept before secrets at any depth were hashed: each nested secret as the user gave it.
_STORED_DOCUMENTS = {"resources": ("properties", "read_only_properties"), "resource_changes": ("change",),
                     "resource_updates": ("data",)}


def _in_clear(document: Any, clear: dict[str, str]) -> Any:
    """``document`` with each secret of ``clear`` (by its hash) as itself where it was given as a plain string (a
    reference to one, hashed with its reference, is left as it is)."""
    if isinstance(document, list):
        return [_in_clear(item, clear) for item in document]
    if isinstance(document, dict):
        secret = clear.get(document.get("$value"))  # type: ignore[arg-type]
        if secret is not None and document == hashed_secret(secret):
            return secret
        return {key: _in_clear(value, clear) for key, value in document.items()}
    return document


def store_as_an_earlier_version(database: Path, secrets: list[str]) -> int:
    """Rewrites the stopped agent's SQLite datastore as a version before issue 24 left it; the rows changed."""
    clear = {hashed_secret(secret)["$value"]: secret for secret in secrets}
    changed = 0
    with sqlite3.connect(database) as conn:
        for table, columns in _STORED_DOCUMENTS.items():
            for rowid, *documents in conn.execute(f"SELECT rowid, {', '.join(columns)} FROM {table}").fetchall():
                old = [json.loads(document) for document in documents]
                new = [_in_clear(document, clear) for document in old]
                if new != old:
                    conn.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in columns)} WHERE rowid = ?",
                                 [*(json.dumps(document) for document in new), rowid])
                    changed += 1
        conn.execute("DELETE FROM background_runs")  # an earlier version kept no record of the walk
    return changed


def test_secrets_an_earlier_version_stored_in_clear_are_hashed_when_the_agent_starts(world: World) -> None:
    answers = Answers(world)
    forma = world.forma(vault_body(SECRETS) + CONSUMER, imports=IMPORTS)
    assert answers.apply(forma).returncode == 0
    world.agent.stop()
    database = world.directory / "svc.db"
    assert store_as_an_earlier_version(database, list(SECRETS.values())) == 2  # the vault and its change
    assert files_holding(SECRETS["db"], world.directory, [world.cloud_path])  # in clear, as it was

    world.agent.start()
    assert "an earlier version stored in clear" in world.agent.log.read_text()
    assert answers.simulate(forma)["ChangesRequired"] is False  # the same secrets compare with their new hashes
    again = answers.apply(forma)
    assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr
    assert_kept_hashed(world, answers, list(SECRETS.values()))  # in no file (the datastore was rebuilt), no answer
