"""A forma written as a user of the original product writes one (``formae`` renamed ``svc``), applied through a
real agent and the real CLI on the FAKE cloud (issue 27 items 1, 3, 5, 6): a resource with its own ``type``
property, scalar and map secrets referenced through their secret resolvables, a new ``svc.SecretValue`` (rendered
Clear in its secret field), a reference interpolated into a plain string, a generated password. Each secret
reaches the provider, never the datastore, a log or an answer in clear, and a second apply changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fake_world import World, fake_world
from support.secrets_scan import files_holding

NO_CHANGES = "No changes needed"
DB_PASSWORD = "db-pw-4f1c9e"  # inside the scalar secret's JSON document
API_KEY = "api-key-7d2b81"  # a map secret's value
ADMIN = "admin-pw-93ae0c"  # a new svc.SecretValue in a secret field

FORMA = """\
extends "@svc/forma.pkl"

import "@svc/svc.pkl"
import "@svc/ext/random.pkl"
import "@fake/fake.pkl"
import "@fake/dns/dnsrecord.pkl"
import "@fake/secret/secret.pkl"

properties: Props

class Props {
  domain: String = "example.com"
}

local app = new svc.Stack { label = "app" }
local cloud = new svc.Target { label = "cloud"; config = new fake.Config { path = "%(cloud)s" } }

local www = new dnsrecord.Record {
  label = "www"
  stack = app.res
  name = "www.\\(properties.domain)"
  type = "CNAME"
  value = "lb.\\(properties.domain)"
}

local db = new secret.Secret {
  label = "db"
  stack = app.res
  secretString = new svc.SecretValue { value = #"{"user":"app","password":"%(db)s"}"# }
}

local keys = new secret.MapSecret {
  label = "keys"
  stack = app.res
  data { ["api"] = svc.value("%(api)s").opaque }
}

forma {
  app
  cloud
  www
  db
  keys
  new secret.Consumer {
    label = "user"
    stack = app.res
    password = db.res.secretValue.json("password")
    apiKey = keys.res.secretValue.at("api")
    generated = random.secretPassword(20, true)
    endpoint = "https://\\(www.res.name)/login"
  }
  new secret.Consumer {
    label = "admin"
    stack = app.res
    password = new svc.SecretValue { value = "%(admin)s" }
  }
}
"""


@pytest.fixture
def world(home: Path, tmp_path: Path) -> Iterator[World]:
    with fake_world(tmp_path) as world:
        yield world


def in_cloud(world: World, resource_type: str) -> list[dict]:
    return [found["properties"] for found in world.cloud_labels(resource_type).values()]


def test_a_formae_forma_applies_and_its_secrets_stay_opaque(world: World, tmp_path: Path) -> None:
    path = tmp_path / "main.pkl"
    path.write_text(FORMA % {"cloud": world.cloud_path, "db": DB_PASSWORD, "api": API_KEY, "admin": ADMIN})
    evaluated = world.svc("eval", str(path), "--output-consumer", "machine")
    assert evaluated.returncode == 0, evaluated.stderr
    forma = json.loads(evaluated.stdout)
    admin = next(r for r in forma["Resources"] if r["Label"] == "admin")
    assert admin["Properties"]["Password"]["$visibility"] == "Clear"  # as the original product renders it

    applied = world.apply(path)
    assert applied.returncode == 0, applied.stdout + applied.stderr

    [dns] = in_cloud(world, "FAKE::Dns::Record")
    assert (dns["Name"], dns["Type"], dns["Value"]) == ("www.example.com", "CNAME", "lb.example.com")
    consumers = {c.get("Endpoint") is not None: c for c in in_cloud(world, "FAKE::Secret::Consumer")}
    user, admin_props = consumers[True], consumers[False]
    assert user["Endpoint"] == "https://www.example.com/login"  # the plain string's reference, substituted
    assert (user["Password"], user["ApiKey"], admin_props["Password"]) == (DB_PASSWORD, API_KEY, ADMIN)
    generated = user["Generated"]
    assert len(generated) == 20

    # Evaluated again, the forma draws another password; set once, the resource keeps the first. Every
    # reference to a secret (a part of one by its JSON path too) compares equal while the secret is unchanged.
    again = world.apply(path)
    assert again.returncode == 0 and NO_CHANGES in again.stdout, again.stdout + again.stderr
    assert {c["Generated"] for c in in_cloud(world, "FAKE::Secret::Consumer") if "Generated" in c} == {generated}

    inventory = world.svc("inventory", "resources", "--output-consumer", "machine")
    assert inventory.returncode == 0, inventory.stderr
    answers = [applied.stdout, applied.stderr, again.stdout, again.stderr, inventory.stdout, world.agent.output()]
    for secret in (DB_PASSWORD, API_KEY, ADMIN, generated):
        # The FAKE cloud's own file holds them (it is the provider); nothing of svc's does.
        assert [p for p in files_holding(secret, tmp_path) if not p.name.startswith("cloud.db")] == [], secret
        assert [a[:200] for a in answers if secret in a] == [], secret
