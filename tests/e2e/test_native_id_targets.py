"""A resource's identity is (target, type, native id): the same native id on another target is another resource.

A real agent running LOCAL, two targets whose roots differ and two stacks whose files have the same relative paths
(the LOCAL native ids): applying the second stack must create its own files, never take over the first stack's
(which once moved the quick start's ``site`` and ``index`` into the other stack, after which destroying that stack
was refused because ``quickstart/manifest`` depended on ``index``). Discovery and adoption are per target too.
The tests run in file order on one agent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.processes import Agent, isolated_home, on_demand_agent, run_svc

ENV = {"COLUMNS": "200"}
HEAD = '''\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"
'''
QUICKSTART = HEAD + '''
local site = new fs.Directory { label = "site"; path = "site"; mode = "0755" }
local index = new fs.File { label = "index"; path = "site/index.html"; content = "quick start\\n" }

forma {
  new svc.Stack { label = "quickstart" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "%(root)s" } }
  site
  index
  new fs.File { label = "manifest"; path = "site/MANIFEST.txt"; content = "This site is \\(index.res.path).\\n" }
}
'''
HELLO = HEAD + '''
forma {
  new svc.Stack { label = "hello" }
  new svc.Target { label = "hello"; config = new lcl.Config { root = "%(root)s" } }
  new fs.Directory { label = "site"; path = "site"; mode = "0755" }
  new fs.File { label = "index"; path = "site/index.html"; content = "hello\\n" }
%(more)s}
'''


@dataclass
class Agents:
    agent: Agent
    base: Path

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.agent.config), env=ENV)

    def root(self, name: str) -> Path:
        return self.base / name

    def forma(self, name: str, text: str, **fields: str) -> Path:
        path = self.base / f"{name}.pkl"
        path.write_text(text % {"root": self.root(name), "more": "", **fields})
        return path

    def apply(self, forma: Path) -> Any:
        return self.svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")

    def resources(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The inventory by (stack, label)."""
        result = self.svc("inventory", "resources", "--output-consumer", "machine")
        assert result.returncode == 0, result.stderr
        return {(r["Stack"], r["Label"]): r for r in json.loads(result.stdout)["Resources"]}


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agents]:
    base = tmp_path_factory.mktemp("native-ids")
    with isolated_home(base):
        agent = on_demand_agent(base, "new LOCAL.PluginConfig {}", imports=("LOCAL",), max_retries=3).start()
        try:
            yield Agents(agent, base)
        finally:
            agent.stop()


def test_the_same_paths_on_another_target_are_other_resources(agents: Agents) -> None:
    quickstart = agents.forma("quickstart", QUICKSTART)
    hello = agents.forma("hello", HELLO)
    first = agents.apply(quickstart)
    assert first.returncode == 0, first.stdout + first.stderr
    before = agents.resources()

    second = agents.apply(hello)
    assert second.returncode == 0, second.stdout + second.stderr
    assert (agents.root("hello") / "site" / "index.html").read_text() == "hello\n"
    resources = agents.resources()
    placed = {key: (r["Target"], r["NativeID"], r["Managed"]) for key, r in resources.items()}
    assert placed == {
        ("quickstart", "site"): ("home", "site", True),
        ("quickstart", "index"): ("home", "site/index.html", True),
        ("quickstart", "manifest"): ("home", "site/MANIFEST.txt", True),
        ("hello", "site"): ("hello", "site", True),
        ("hello", "index"): ("hello", "site/index.html", True),
    }
    for key, resource in before.items():  # the quick start's resources are untouched: same ksuid, same version
        assert (resources[key]["Ksuid"], resources[key]["Properties"]) == (resource["Ksuid"], resource["Properties"])

    again = agents.apply(quickstart)
    assert again.returncode == 0 and "No changes needed" in again.stdout, again.stdout + again.stderr

    destroyed = agents.svc("destroy", str(hello), "--yes", "--wait")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert not (agents.root("hello") / "site").exists()
    assert (agents.root("quickstart") / "site" / "index.html").read_text() == "quick start\n"
    assert set(agents.resources()) == {("quickstart", "site"), ("quickstart", "index"), ("quickstart", "manifest")}


def test_discovery_and_adoption_keep_to_their_target(agents: Agents) -> None:
    """A file made by hand on the hello root whose path the quick start manages on its own root is discovered
    there, and adopted by a forma for that target, the quick start's file staying where it is."""
    hello = agents.forma("hello", HELLO)
    applied = agents.apply(hello)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    (agents.root("hello") / "site" / "MANIFEST.txt").write_text("made by hand\n")

    discovered = agents.svc("discover", "--output-consumer", "machine")
    assert discovered.returncode == 0, discovered.stdout + discovered.stderr
    found = json.loads(discovered.stdout)["Resources"]
    assert [(r["Target"], r["NativeID"], r["Stack"]) for r in found] == [("hello", "site/MANIFEST.txt", "$unmanaged")]
    label = found[0]["Label"]
    unmanaged = agents.resources()[("$unmanaged", label)]

    adopting = agents.forma("hello", HELLO, more=(f'  new fs.File {{ label = "{label}"; path = "site/MANIFEST.txt"; '
                                                  'content = "made by hand\\n" }\n'))
    adopted = agents.apply(adopting)
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    resources = agents.resources()
    assert resources[("hello", label)]["Ksuid"] == unmanaged["Ksuid"]  # adopted in place, not created anew
    assert ("$unmanaged", label) not in resources
    assert resources[("quickstart", "manifest")]["Target"] == "home"
    assert (agents.root("quickstart") / "site" / "MANIFEST.txt").read_text() == "This site is site/index.html.\n"


def test_another_stack_cannot_take_over_a_managed_resource_on_the_same_target(agents: Agents) -> None:
    """On one target one native id is one resource: a stack declaring the quick start's directory fails, and the
    quick start keeps it (it used to be moved into the other stack)."""
    before = agents.resources()[("quickstart", "site")]
    rival = agents.forma("rival", HEAD + '''
forma {
  new svc.Stack { label = "rival" }
  new svc.Target { label = "home"; config = new lcl.Config { root = "%(home)s" } }
  new fs.Directory { label = "mine"; path = "site"; mode = "0755" }
}
''', home=str(agents.root("quickstart")))
    refused = agents.apply(rival)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "LOCAL::FS::Directory 'site' on target 'home' already belongs to quickstart/site" in refused.stdout, \
        refused.stdout
    assert "internal error" not in refused.stdout, refused.stdout
    after = agents.resources()
    assert after[("quickstart", "site")]["Ksuid"] == before["Ksuid"]
    assert ("rival", "mine") not in after
