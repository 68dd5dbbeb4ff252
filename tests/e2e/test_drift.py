"""Drift end to end, with a real agent running the LOCAL plugin and the real CLI: files edited and deleted by
hand → ``POST /admin/synchronize`` stores what is on disk → ``GET /stacks/{stack}/drift`` lists it → a
reconcile is refused and says what changed and the two ways out → ``--force`` puts the forma back on disk →
the next reconcile is a no-op. The extract way out is ``test_drift_extract.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.processes import Agent, isolated_home, on_demand_agent, run_svc

ENV = {"COLUMNS": "200"}
PAGE = "<!-- site -->\nhello\n"  # what the forma's template renders to
FORMA = '''\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

local dir = new fs.Directory { label = "dir"; path = "site"; mode = "0755" }

forma {
  new svc.Stack { label = "web" }
  new svc.Target { label = "disk"; config = new lcl.Config { root = "%s" } }
  dir
  new fs.File { label = "page"; path = "site/page.html"; content = "<!-- \\(dir.res.path) -->\\nhello\\n" }
  new fs.File { label = "notes"; path = "site/notes.txt"; content = "plain text\\n" }
}
'''


@dataclass
class Site:
    agent: Agent
    root: Path
    forma: Path

    @property
    def api(self) -> str:
        return f"{self.agent.url}/api/v1"

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.agent.config), env=ENV)

    def apply(self, *extra: str) -> Any:
        return self.svc("apply", "--mode", "reconcile", str(self.forma), "--yes", "--wait", *extra)

    def inventory(self) -> dict[str, dict[str, Any]]:
        result = self.svc("inventory", "resources", "--query", "stack:web", "--output-consumer", "machine")
        assert result.returncode == 0, result.stderr
        return {r["Label"]: r for r in json.loads(result.stdout)["Resources"]}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    base = tmp_path_factory.mktemp("drift")
    with isolated_home(base):
        forma = base / "site.pkl"
        forma.write_text(FORMA % (base / "root"))
        agent = on_demand_agent(base, "new LOCAL.PluginConfig {}", imports=("LOCAL",), max_retries=3).start()
        try:
            yield Site(agent, base / "root", forma)
        finally:
            agent.stop()


def test_a_hand_edit_is_synchronized_shown_refused_and_reverted(site: Site) -> None:
    created = site.apply()
    assert created.returncode == 0, created.stdout + created.stderr
    page, notes = site.root / "site" / "page.html", site.root / "site" / "notes.txt"
    assert page.read_text() == PAGE

    # Behind svc's back: a templated file edited, another deleted.
    page.write_text("edited by hand\n")
    notes.unlink()
    synced = httpx.post(f"{site.api}/admin/synchronize", timeout=60)
    assert synced.status_code == 200 and synced.json()["CommandId"], synced.text
    inventory = site.inventory()
    assert inventory["page"]["Properties"]["Content"]["$value"] == "edited by hand\n"  # the template stays too
    assert "notes" not in inventory

    drift = httpx.get(f"{site.api}/stacks/web/drift")
    assert drift.status_code == 200, drift.text
    modified = {m["Label"]: m for m in drift.json()["ModifiedResources"]}
    assert set(modified) == {"page", "notes"}
    assert modified["notes"]["Operation"] == "delete" and "PatchDocument" not in modified["notes"]
    assert modified["page"]["Operation"] == "update"
    assert modified["page"]["PatchDocument"] == [{"op": "replace", "path": "/Content", "value": "edited by hand\n"}]
    assert modified["page"]["OldProperties"]["Content"].get("$value") is None
    alias = httpx.get(f"{site.api}/stacks/web/changes-since-last-reconcile")
    assert alias.status_code == 200 and alias.json() == drift.json()
    assert httpx.get(f"{site.api}/stacks/nowhere/drift").status_code == 404
    every = httpx.get(f"{site.api}/drift")  # every stack at once: the stacks that drifted, as each stack's route
    assert every.status_code == 200 and every.json() == {"ModifiedStacks": {"web": drift.json()}, "Stacks": 1}

    refused = site.apply()
    assert refused.returncode == 1
    out = refused.stdout
    assert "update  page (LOCAL::FS::File)" in out and "delete  notes (LOCAL::FS::File)" in out, out
    # A multi-line value changed: a unified diff of its lines, as svc plan shows one.
    assert "/Content:\n" in out and "-<!-- site -->\n" in out and "+edited by hand\n" in out, out
    assert "svc extract --query 'stack:web'" in out, out
    assert f"svc apply --mode reconcile --force {site.forma}" in out, out
    assert refused.stderr.startswith("Error: reconcile refused"), refused.stderr
    machine = site.svc("apply", "--mode", "reconcile", str(site.forma), "--yes", "--output-consumer",
                      "machine")
    assert machine.returncode == 1 and "ReconcileRejected" in machine.stderr and machine.stdout == ""
    assert page.read_text() == "edited by hand\n" and not notes.exists()  # refused: nothing touched

    # The other way out, `svc extract --query 'stack:web' FILE` absorbing the change so that the next reconcile
    # is a no-op, is tests/e2e/test_drift_extract.py (issue 6 item 5).

    forced = site.apply("--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert page.read_text() == PAGE and notes.read_text() == "plain text\n"
    again = site.apply()
    assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr
    assert httpx.get(f"{site.api}/stacks/web/drift").json() == {"ModifiedResources": []}
    assert httpx.get(f"{site.api}/drift").json() == {"ModifiedStacks": {}, "Stacks": 1}


NOTE = '''\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

forma {
  new svc.Stack { label = "notes" }
  new svc.Target { label = "notes-disk"; config = new lcl.Config { root = "%s" } }
  new fs.File { label = "today"; path = "notes/today.txt"; content = "%s" }
}
'''


def test_a_hand_edit_an_update_finds_is_drift_until_the_forma_says_it(site: Site) -> None:
    """Issue 24 item 8: an update that stops because its file changed outside svc since it was planned stores
    that change as drift like a synchronization pass would: listed, and the next reconcile is refused."""
    forma = site.forma.parent / "notes.pkl"

    def reconcile(content: str, *extra: str) -> Any:
        forma.write_text(NOTE % (site.root, content))
        return site.svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait", *extra)

    created = reconcile("teal\\n")
    assert created.returncode == 0, created.stdout + created.stderr
    note = site.root / "notes" / "today.txt"
    note.write_text("red\n")  # by hand, and no synchronization pass has seen it

    stopped = reconcile("navy\\n")  # the agent reads the file before writing it
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "changed outside svc since it was planned" in stopped.stdout + stopped.stderr
    assert note.read_text() == "red\n"
    drift = httpx.get(f"{site.api}/stacks/notes/drift", timeout=30)
    assert drift.status_code == 200, drift.text
    [modified] = drift.json()["ModifiedResources"]
    assert (modified["Label"], modified["PatchDocument"]) == (
        "today", [{"op": "replace", "path": "/Content", "value": "red\n"}])

    refused = reconcile("navy\\n")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: reconcile refused"), refused.stderr
    assert "update  today (LOCAL::FS::File)" in refused.stdout, refused.stdout
    assert note.read_text() == "red\n"  # the hand edit is not overwritten

    # Extracted, the stack as it is absorbs it (the stack's new baseline); then the forma is the truth again.
    extracted = forma.parent / "notes-now.pkl"
    assert site.svc("extract", "--query", "stack:notes", str(extracted)).returncode == 0
    absorbed = site.svc("apply", "--mode", "reconcile", str(extracted), "--yes", "--wait")
    assert absorbed.returncode == 0 and "No changes needed" in absorbed.stdout, absorbed.stdout + absorbed.stderr
    assert httpx.get(f"{site.api}/stacks/notes/drift", timeout=30).json() == {"ModifiedResources": []}
    changed = reconcile("navy\\n")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert note.read_text() == "navy\n"
