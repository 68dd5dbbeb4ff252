"""``svc extract`` end to end, with a real agent running the LOCAL and FAKE plugins and the real CLI.

* Drift absorbed: files changed by hand → ``POST /admin/synchronize`` stores what is on disk → a reconcile is
  refused → ``svc extract --query 'stack:web' FILE`` writes the stack as it is now → a reconcile of FILE (or of
  the forma with the change folded in) plans nothing and touches nothing. The other way out, ``--force``, is
  in ``test_drift.py``.
* A FAKE stack with references, templates, provider defaults, write-only fields, secrets, set-once values,
  json-format fields and sub-resources extracts to a forma whose reconcile plans no changes.
* The command's options and refusals.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.processes import Agent, isolated_home, on_demand_agent, run_svc, run_svc_on_terminal

ENV = {"COLUMNS": "200"}
FORMA = '''\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

local dir = new fs.Directory { label = "dir"; path = "site"; mode = "%(mode)s" }

forma {
  new svc.Stack { label = "web" }
  new svc.Target { label = "disk"; config = new lcl.Config { root = "%(root)s" } }
  dir
  new fs.File { label = "page"; path = "site/page.html"; content = %(page)s }
  new fs.File { label = "style"; path = "site/style.css"; content = "%(style)s" }
}
'''
ORIGINAL = {"mode": "0755", "page": r'"<!-- \(dir.res.path) -->\nhello\n"', "style": r"h1 { color: teal; }\n"}
EDITED = "h1 { color: red; }\n"


@dataclass
class Site:
    agent: Agent
    config: Path
    root: Path
    forma: Path
    directory: Path

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.config), env=ENV)

    def reconcile(self, path: Path) -> Any:
        return self.svc("apply", "--mode", "reconcile", str(path), "--yes", "--wait")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    base = tmp_path_factory.mktemp("drift-extract")
    with isolated_home(base):
        forma = base / "site.pkl"
        forma.write_text(FORMA % {**ORIGINAL, "root": base / "root"})
        agent = on_demand_agent(base, "new LOCAL.PluginConfig {} new FAKE.PluginConfig {}", imports=("LOCAL", "FAKE"),
                                max_retries=3).start()
        try:
            yield Site(agent, agent.config, base / "root", forma, base)
        finally:
            agent.stop()


def test_extract_absorbs_a_hand_edit_and_the_next_reconcile_is_a_no_op(site: Site) -> None:
    created = site.reconcile(site.forma)
    assert created.returncode == 0, created.stdout + created.stderr
    root = site.root
    page, style, directory = root / "site" / "page.html", root / "site" / "style.css", root / "site"

    # Behind svc's back: a file's text, a templated file's text and a directory's mode.
    style.write_text(EDITED)
    page.write_text("typed over the template\n")
    os.chmod(directory, 0o700)
    synced = httpx.post(f"{site.agent.url}/api/v1/admin/synchronize", timeout=60)
    assert synced.status_code == 200, synced.text
    refused = site.reconcile(site.forma)
    assert refused.returncode == 1 and "reconcile refused" in refused.stderr, refused.stdout + refused.stderr

    extracted = site.directory / "extracted.pkl"
    result = site.svc("extract", "--query", "stack:web", str(extracted))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"Extracted 3 resource(s) to '{extracted}'\n"
    text = extracted.read_text()
    assert f'content = "{EDITED.strip()}\\n"' in text and 'content = "typed over the template\\n"' in text
    assert 'mode = "0700"' in text

    # Taking the drift in changes no resource, yet it is the stack's new baseline: a person is asked first.
    command = ("apply", "--mode", "reconcile", str(extracted), "--config", str(site.config))
    simulated = site.svc(*command[:-2], "--simulate")
    assert simulated.returncode == 0 and "takes in the changes made outside svc to stack(s) web" in simulated.stdout
    assert "nothing was recorded" in simulated.stdout
    unattended = site.svc(*command[:-2])
    assert unattended.returncode == 1 and "confirmation needs an interactive terminal" in unattended.stderr
    code, screen = run_svc_on_terminal(*command, answer="n", env=ENV)
    assert code == 0 and "Nothing was recorded" in screen, screen
    assert _drifted(site) == {"dir", "page", "style"}
    code, screen = run_svc_on_terminal(*command, answer="y", env=ENV)
    assert code == 0 and "Recorded as the new baseline" in screen, screen
    assert _drifted(site) == set()

    for _ in range(2):  # absorbed: nothing to do, now and next time
        again = site.reconcile(extracted)
        assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr
    assert style.read_text() == EDITED and page.read_text() == "typed over the template\n"
    assert f"{directory.stat().st_mode & 0o777:o}" == "700"
    # That no-op reconcile is the stack's new baseline: nothing is listed as drift any more.
    drift = httpx.get(f"{site.agent.url}/api/v1/stacks/web/drift", timeout=30)
    assert drift.status_code == 200 and drift.json() == {"ModifiedResources": []}, drift.text

    # The same change folded into the original forma by hand is absorbed as well…
    folded = site.directory / "folded.pkl"
    folded.write_text(FORMA % {"root": root, "mode": "0700", "page": r'"typed over the template\n"',
                               "style": r"h1 { color: red; }\n"})
    assert "No changes needed" in site.reconcile(folded).stdout
    # …and the original forma, which says otherwise, is now an ordinary change of the stack, not drift.
    planned = site.svc("apply", "--mode", "reconcile", str(site.forma), "--simulate")
    assert planned.returncode == 0 and "refused" not in planned.stdout + planned.stderr, planned.stdout + planned.stderr
    assert "~ update" in planned.stdout and "style" in planned.stdout, planned.stdout


def _drifted(site: Site) -> set[str]:
    drift = httpx.get(f"{site.agent.url}/api/v1/stacks/web/drift", timeout=30)
    assert drift.status_code == 200, drift.text
    return {item["Label"] for item in drift.json()["ModifiedResources"]}


def test_extract_options_and_refusals(site: Site) -> None:
    existing = site.directory / "taken.pkl"
    existing.write_text("// mine\n")
    refused = site.svc("extract", "--query", "stack:web", str(existing))
    assert refused.returncode == 1 and refused.stderr == f"Error: {existing} already exists; pass --yes to overwrite it\n"
    assert existing.read_text() == "// mine\n"

    blank = site.svc("extract", "--query", "  ", str(site.directory / "x.pkl"))
    assert blank.returncode == 1 and "--query must not be blank" in blank.stderr
    none = site.svc("extract", "--query", "stack:nothing-here", str(site.directory / "x.pkl"))
    assert none.returncode == 1 and "no resources match the query 'stack:nothing-here'" in none.stderr
    assert not (site.directory / "x.pkl").exists()

    # --yes overwrites; .pkl is added; machine mode prints a JSON summary and nothing else.
    machine = site.svc("extract", "--query", "stack:web label:page", str(site.directory / "taken"), "--yes",
                       "--output-consumer", "machine")
    assert machine.returncode == 0, machine.stderr
    summary = json.loads(machine.stdout)
    assert summary["File"] == str(existing) and summary["Count"] == 1
    assert summary["Resources"] == [{"Label": "page", "Type": "LOCAL::FS::File", "Stack": "web"}]
    assert summary["Excluded"] == [] and summary["HashedSecrets"] == [] and summary["WriteOnly"] == []
    assert "local page = new fs.File" in existing.read_text()


CLOUD = '''\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/net/network.pkl"
import "@fake/net/subnet.pkl"
import "@fake/compute/server.pkl"
import "@fake/storage/bucket.pkl"
import "@fake/test/item.pkl"

local net = new network.Network {
  label = "net"
  cidr = "10.0.0.0/16"
  tags { new fake.Tag { key = "Name"; value = "net" } }
  labels { "b"; "a" }
  settings = #"{"b": 1, "a": [1, 2]}"#
}
local sub = new subnet.Subnet { label = "sub"; networkId = net.res.networkId; cidr = "10.0.1.0/24"; zones { "z1" } }
local gw = new subnet.Gateway { label = "gw"; networkId = net.res.networkId }

forma {
  new svc.Stack { label = "cloud" }
  new svc.Target { label = "fake"; config = new fake.Config { path = "%(path)s"; note = "test" } }
  net
  sub
  gw
  new server.Server {
    label = "vm"
    subnetId = sub.res.subnetId
    gatewayId = gw.res.gatewayId
    image = "ubuntu"
    adminPassword = svc.value("hunter2").opaque
    userData = #"{"boot": true,   "steps": [1, 2]}"#
    rules { new { port = 80 } new { port = 443; protocol = "udp" } }
    placement { zone = "z1" }
  }
  new bucket.Bucket {
    label = "data"
    name = "data-bucket"
    apiKey = svc.value("k3y").opaque
    version = svc.value("v1").setOnce
    policy = #"{"Version": "1"}"#
    note = "bucket of \\(net.res.networkId)"
  }
  new item.Item { label = "first"; value = "1"; token = "t" }
  new item.Item { label = "second"; ref = net.res.cidr }
}
'''


def test_a_fake_stack_with_every_kind_of_field_extracts_to_no_changes(site: Site) -> None:
    forma = site.directory / "cloud.pkl"
    forma.write_text(CLOUD % {"path": site.directory / "cloud.db"})
    created = site.reconcile(forma)
    assert created.returncode == 0, created.stdout + created.stderr

    extracted = site.directory / "cloud-extracted.pkl"
    result = site.svc("extract", "--query", "stack:cloud", str(extracted))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 secret(s) are known only by their hash" in result.stderr and "vm.adminPassword" in result.stderr
    text = extracted.read_text()
    assert "hunter2" not in text and "k3y" not in text
    assert "networkId = net.res.networkId" in text and "subnetId = sub.res.subnetId" in text
    assert 'note = "bucket of \\(net.res.networkId)"' in text
    assert "mtu = 1500" in text  # the provider's default, as read back
    assert 'key = "fake:owner"' in text  # a tag the provider added

    simulated = site.svc("apply", "--mode", "reconcile", str(extracted), "--simulate", "--output-consumer", "machine")
    assert simulated.returncode == 0, simulated.stderr
    assert json.loads(simulated.stdout)["ChangesRequired"] is False, simulated.stdout + "\n" + text
    applied = site.reconcile(extracted)
    assert applied.returncode == 0 and "No changes needed" in applied.stdout, applied.stdout + applied.stderr
