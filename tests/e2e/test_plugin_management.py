"""Plugin management through the agent (issue 27 item 9): ``svc plugin install | update | uninstall | search``,
``POST /plugins/install | uninstall | update`` and ``GET /plugins?scope=available``.

Real wheels (svc, the LOCAL plugin at two versions, a distribution that is no plugin, one whose manifest does not
evaluate, one project outside the ``svc-plugin-*`` convention) in a PEP 503 index on disk; a throwaway
virtualenv with svc installed from the wheel directory, whose agent starts with no plugin at all. Every pip run
is offline and lands in that virtualenv, never in the project's.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.processes import Agent, on_demand_agent
from support.wheels import (
    Environment,
    build_package,
    build_plugin,
    build_svc,
    served,
    simple_index,
    throwaway_environment,
)
from svc import __version__

OLD, NEW = "0.1.0", "0.2.0"
LOCAL = "svc-plugin-local"
FORMA = '''\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@local/local.pkl" as lcl
import "@local/fs.pkl"

forma {
  new svc.Stack { label = "notes" }
  new svc.Target { label = "disk"; config = new lcl.Config { root = "%s" } }
  new fs.File { label = "todo"; path = "todo.txt"; content = "%s\\n" }
}
'''
pytestmark = pytest.mark.slow  # builds wheels and a virtualenv: about three minutes
BROKEN_MANIFEST = 'amends "@svc/plugin-manifest.pkl"\n\nname = 42\n'


@dataclass(frozen=True)
class Deployment:
    environment: Environment
    agent: Agent
    wheels: Path  # where the agent's svc came from: its default package source
    index_url: str  # the same wheels as a PEP 503 index
    work: Path

    @property
    def api(self) -> str:
        return f"{self.agent.url}/api/v1"

    def svc(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.environment.svc(*args, "--config", str(self.agent.config))

    def machine(self, *args: str) -> Any:
        result = self.svc(*args, "--output-consumer", "machine")
        assert result.returncode == 0, result.stdout + result.stderr
        return json.loads(result.stdout)

    def apply(self, content: str) -> subprocess.CompletedProcess[str]:
        forma = self.work / "notes.pkl"
        forma.write_text(FORMA % (self.work / "root", content))
        return self.svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    work = tmp_path_factory.mktemp("plugins")
    wheels = work / "wheels"
    build_svc(__version__, work, wheels)
    for version in (OLD, NEW):
        build_plugin("local", version, work, wheels)
    build_package("svc-plugin-plain", "1.0.0", {}, work, wheels, description="a library, no svc plugin")
    build_package("svc-plugin-broken", "1.0.0", {"manifest.pkl": BROKEN_MANIFEST}, work, wheels,
                  entry_points='BROKEN = "svc_plugin_broken"')
    build_package("unrelated-tool", "1.0.0", {}, work, wheels)
    index = simple_index(wheels, work / "index")
    environment = throwaway_environment(work)
    [svc_wheel] = wheels.glob("svc-*.whl")
    environment.pip_install("--no-index", str(svc_wheel))
    agent = on_demand_agent(work, "", imports=(), env=environment.env)
    agent.executable = str(environment.venv / "bin" / "svc")
    agent.start()
    try:
        yield Deployment(environment, agent, wheels, index.as_uri(), work)
    finally:
        agent.stop()


def running_plugins(deployment: Deployment) -> dict[str, str]:
    """``GET /stats``' plugins (namespace → version), as ``svc status agent`` shows them."""
    stats = httpx.get(f"{deployment.api}/stats", timeout=30).json()
    return {plugin["Namespace"]: plugin["Version"] for plugin in stats.get("Plugins") or []}


def test_install_apply_update_and_uninstall_without_a_restart(deployment: Deployment) -> None:
    pid = deployment.agent.process.pid if deployment.agent.process else None
    refused = deployment.apply("before")
    assert refused.returncode == 1
    assert "@local" in refused.stderr or "LOCAL" in refused.stderr, refused.stderr  # the CLI has no schema yet

    installed = deployment.svc("plugin", "install", f"{LOCAL}=={OLD}", "--index-url", deployment.index_url)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert f"{LOCAL} installed {OLD} (plugin LOCAL)" in installed.stdout
    assert deployment.environment.installed(LOCAL) is not None
    assert (deployment.environment.site_packages / "svc_plugin_local").is_dir()  # the throwaway env, not ours
    listed = {p["namespace"]: p for p in httpx.get(f"{deployment.api}/plugins").json()["plugins"]}
    assert listed["LOCAL"]["loadStatus"] == "running" and listed["LOCAL"]["installedVersion"] == OLD
    assert running_plugins(deployment) == {"LOCAL": OLD}  # stats list it too, with the version installed

    applied = deployment.apply("first")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (deployment.work / "root" / "todo.txt").read_text() == "first\n"

    # From the agent's own source this time (where its svc came from): no index named.
    updated = deployment.machine("plugin", "update", LOCAL)
    assert updated == {"operations": [{"name": LOCAL, "type": "resource", "action": "update", "version": NEW,
                                       "namespaces": ["LOCAL"]}], "requiresRestart": False}
    listed = {p["namespace"]: p for p in httpx.get(f"{deployment.api}/plugins").json()["plugins"]}
    assert listed["LOCAL"]["installedVersion"] == NEW and listed["LOCAL"]["loadStatus"] == "running"
    assert running_plugins(deployment) == {"LOCAL": NEW}
    again = deployment.apply("second")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (deployment.work / "root" / "todo.txt").read_text() == "second\n"
    assert deployment.machine("plugin", "update", LOCAL)["operations"][0]["action"] == "noop"

    stored = httpx.get(f"{deployment.api}/resources", params={"query": "stack:notes"}).json()
    removed = deployment.svc("plugin", "uninstall", "LOCAL")  # by namespace
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert f"{LOCAL} uninstalled {NEW}" in removed.stdout
    assert deployment.environment.installed(LOCAL) is None
    assert running_plugins(deployment) == {}
    # The CLI (same environment) no longer has the schema; the agent refuses the type as unknown.
    forma = {"Resources": [{**resource, "Properties": {**resource["Properties"], "Content": "third\n"}}
                           for resource in stored["Resources"]]}
    unknown = httpx.post(f"{deployment.api}/commands", headers={"Client-ID": "plugin-tests"},
                         data={"command": "apply", "mode": "patch"},
                         files={"file": ("forma.json", json.dumps(forma).encode(), "application/json")})
    assert unknown.status_code == 400, unknown.text
    assert "unknown resource type LOCAL::FS::File (plugin LOCAL is not enabled)" in unknown.json()["message"]
    assert deployment.agent.process is not None and deployment.agent.process.pid == pid  # never restarted


def test_a_plugin_installed_through_the_agent_runs_again_after_a_restart(deployment: Deployment) -> None:
    def running() -> dict[str, str]:
        return {p["namespace"]: p["loadStatus"] for p in httpx.get(f"{deployment.api}/plugins").json()["plugins"]}

    installed = deployment.machine("plugin", "install", "svc-plugin-local")  # the newest, from svc's own source
    assert [(o["action"], o["version"]) for o in installed["operations"]] == [("install", NEW)]
    deployment.agent.stop()
    deployment.agent.start()  # its config still names no plugin
    assert running() == {"LOCAL": "running"}
    assert deployment.machine("plugin", "uninstall", "local")["operations"][0]["action"] == "remove"
    deployment.agent.stop()
    deployment.agent.start()
    assert running() == {}


def test_what_is_no_svc_plugin_is_refused_and_not_left_installed(deployment: Deployment) -> None:
    plain = deployment.svc("plugin", "install", "svc-plugin-plain")
    assert plain.returncode == 1
    assert plain.stderr.strip().splitlines()[-1] == (
        "Error: plugin install refused by the agent (NotASvcPlugin): svc-plugin-plain is not a svc plugin: "
        "svc-plugin-plain registers no svc.plugins entry point; it was uninstalled again")
    assert deployment.environment.installed("svc-plugin-plain") is None

    broken = httpx.post(f"{deployment.api}/plugins/install", json={"packages": [{"name": "svc-plugin-broken"}]},
                        timeout=300)
    assert broken.status_code == 422 and broken.json()["error"] == "NotASvcPlugin", broken.text
    assert "manifest of plugin BROKEN is invalid" in broken.json()["data"]["Reason"]
    assert deployment.environment.installed("svc-plugin-broken") is None

    missing = deployment.svc("plugin", "install", "svc-plugin-nowhere", "--find-links", str(deployment.wheels))
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines()[-1] == (
        "Error: plugin install refused by the agent (PluginNotFound): svc-plugin-nowhere was not found in "
        f"{deployment.wheels} (named in the request); check the name and version (svc plugin search lists what "
        "that source offers)")
    assert not any(p["namespace"] == "BROKEN" for p in httpx.get(f"{deployment.api}/plugins").json()["plugins"])


def test_search_lists_the_plugins_of_the_source_with_filters(deployment: Deployment) -> None:
    found = deployment.machine("plugin", "search", "--index-url", deployment.index_url)["plugins"]
    assert [(p["package"], p["namespace"], p["availableVersions"]) for p in found] == [
        (LOCAL, "LOCAL", [NEW, OLD])]  # not the plain library, the broken one nor unrelated-tool
    assert found[0]["category"] == "local" and found[0]["type"] == "resource" and "Files" in found[0]["summary"]

    def search(*args: str) -> list[str]:
        return [p["package"] for p in deployment.machine("plugin", "search", *args)["plugins"]]

    # Without an index named: the wheel directory the agent's svc came from.
    assert search("directories") == [LOCAL]
    assert search("nothing-like-it") == []
    assert search("--category", "LOCAL", "--type", "resource") == [LOCAL]
    assert search("--category", "cloud") == []
    assert search("--type", "auth") == []
    with served(deployment.work / "index") as url:  # a PEP 503 index over HTTP: pages of relative links
        assert search("--index-url", f"{url}/", "--category", "local") == [LOCAL]
    human = deployment.svc("plugin", "search", "local")
    assert human.returncode == 0 and LOCAL in human.stdout and f"{NEW}, {OLD}" in human.stdout, human.stdout


# The original CLI's plugin requests (reference api-cli-config.md §1.6, endpoints 20–24): the method, the path,
# its query parameters, its JSON body, as that client sends them; the status and the shape it decodes.
Check = Callable[[httpx.Response], None]


def _plugins_list(response: httpx.Response) -> None:
    assert isinstance(response.json()["plugins"], list)


def _typed(error: str) -> Check:
    def check(response: httpx.Response) -> None:
        assert response.json()["error"] == error and isinstance(response.json()["data"], dict), response.text
    return check


def _message(response: httpx.Response) -> None:
    assert isinstance(response.json()["message"], str), response.text


def _available(response: httpx.Response) -> None:
    [local] = response.json()["plugins"]
    assert {"name", "type", "namespace", "category", "summary", "availableVersions"} <= set(local)


ORIGINAL_CLI_REQUESTS: list[tuple[str, str, str, dict[str, str], Any, int, Check]] = [
    ("installed (extract, eval, project init)", "GET", "/plugins", {"scope": "installed"}, None, 200, _plugins_list),
    ("installed by default", "GET", "/plugins", {}, None, 200, _plugins_list),
    ("available, with every filter", "GET", "/plugins",
     {"scope": "available", "q": "files", "category": "local", "type": "resource", "channel": "stable"}, None, 200,
     _available),
    ("a bad scope", "GET", "/plugins", {"scope": "everything"}, None, 400, _message),
    ("info of one not installed", "GET", "/plugins/nowhere", {"channel": "stable"}, None, 404,
     _typed("PluginNotFound")),
    ("install with no packages", "POST", "/plugins/install", {}, {"packages": [], "channel": "stable"}, 400, _message),
    ("install of an unknown one", "POST", "/plugins/install", {},
     {"packages": [{"name": "svc-plugin-nowhere", "version": "1.0.0"}], "channel": "stable"}, 404,
     _typed("PluginNotFound")),
    ("install with a version range", "POST", "/plugins/install", {},
     {"packages": [{"name": LOCAL, "version": ">=0.1"}]}, 400, _message),
    ("install of a pip option", "POST", "/plugins/install", {},
     {"packages": [{"name": "--index-url=http://127.0.0.1:9/simple"}]}, 400, _message),
    ("uninstall with no packages", "POST", "/plugins/uninstall", {}, {"packages": []}, 400, _message),
    ("uninstall of one not installed", "POST", "/plugins/uninstall", {}, {"packages": [{"name": "nowhere"}]}, 404,
     _typed("PluginNotFound")),
    ("update of one not installed", "POST", "/plugins/update", {}, {"packages": [{"name": "nowhere"}],
                                                                    "channel": "stable"}, 404,
     _typed("PluginNotFound")),
]


@pytest.mark.parametrize(("case", "method", "path", "params", "body", "status", "check"), ORIGINAL_CLI_REQUESTS,
                         ids=[case[0] for case in ORIGINAL_CLI_REQUESTS])
def test_the_original_clis_plugin_requests(deployment: Deployment, case: str, method: str, path: str,
                                           params: dict[str, str], body: Any, status: int, check: Check) -> None:
    headers = {"Accept": "application/json", **({"Content-Type": "application/json"} if body is not None else {})}
    response = httpx.request(method, f"{deployment.api}{path}", params=params, headers=headers,
                             content=json.dumps(body).encode() if body is not None else None, timeout=300)
    assert response.status_code == status, f"{case}: {response.status_code} {response.text}"
    check(response)
    assert deployment.environment.installed("svc-plugin-nowhere") is None
