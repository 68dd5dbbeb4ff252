"""The bench a case runs on: a real agent (``svc agent start``, the plugin in its own process) on a SQLite file in
a scratch directory, the plugin once more through a host of the kit's own, and the formas the phases submit."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from svc.plugins.conformance import agent_api
from svc.plugins.conformance.case import Case, ConformanceFailure, Json, expect
from svc.plugins.conformance.direct import DirectPlugin

SVC = str(Path(sys.executable).parent / "svc")  # the svc of the environment the plugin is installed in
_HEALTHY_WITHIN = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_agent(process: subprocess.Popen[bytes] | None) -> None:
    """Stops an agent as an operator does (SIGTERM: it finishes what it is writing), killing it if it hangs."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class AgentProcess:
    """``svc agent start --config CONFIG``, its output in ``log``."""

    config: Path
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    def start(self) -> AgentProcess:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen([SVC, "agent", "start", "--config", str(self.config)], stdout=log,
                                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + _HEALTHY_WITHIN
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConformanceFailure(f"the agent exited with {self.process.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/api/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise ConformanceFailure(f"the agent was not healthy after {_HEALTHY_WITHIN:.0f}s:\n{self.output()}")

    def stop(self) -> None:
        stop_agent(self.process)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Bench:
    case: Case
    agent: AgentProcess
    directory: Path
    plugin: DirectPlugin

    def svc(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """The real CLI of this environment, pointed at the bench's agent."""
        return subprocess.run([SVC, *args, "--config", str(self.agent.config)], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "COLUMNS": "200"})

    def forma(self, variant: str | None) -> Path:
        """The case's forma declaring ``variant`` (``None``: nothing; ``"setup"``: the subject's parents alone)."""
        path = self.directory / f"{self.case.id}-{variant or 'empty'}.pkl"
        body = "" if variant is None else textwrap.dedent(self.case.setup) + "\n" + (
            "" if variant == "setup" else textwrap.dedent(self.case.resources[variant]))
        path.write_text(
            'amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\n' + textwrap.dedent(self.case.imports) + "\n"
            "forma {\n"
            f'  new svc.Stack {{ label = "{self.case.stack}" }}\n'
            f'  new svc.Target {{ label = "target"; config = {self.case.target} }}\n'
            + textwrap.indent(textwrap.dedent(body), "  ") + "\n}\n")
        return path

    @property
    def api(self) -> str:
        return f"{self.agent.url}/api/v1"

    def apply(self, variant: str, mode: str = "reconcile", *, force: bool = False) -> Json | None:
        """``svc apply --mode MODE VARIANT --yes --wait`` through the API: the finished command, which succeeded;
        None when nothing needed to change."""
        return agent_api.run(self.api, "apply", self.forma(variant), mode=mode, force=force)

    def destroy(self, variant: str) -> Json | None:
        """``svc destroy VARIANT --yes --wait`` through the API, as ``apply``."""
        return agent_api.run(self.api, "destroy", self.forma(variant), on_dependents="abort")

    def cli_apply(self, variant: str) -> subprocess.CompletedProcess[str]:
        """``svc apply --mode reconcile VARIANT --yes --wait`` by the real CLI (what it prints is under test)."""
        result = self.svc("apply", "--mode", "reconcile", str(self.forma(variant)), "--yes", "--wait")
        expect(result.returncode == 0, f"apply {variant} failed:\n{result.stdout}{result.stderr}")
        return result

    def inventory(self) -> dict[str, Json]:
        """The stack's resources by label, from the API that ``svc inventory resources`` prints."""
        return {resource["Label"]: resource for resource in self.resources(f"stack:{self.case.stack}")}

    def resources(self, query: str) -> list[Json]:
        return agent_api.resources(self.api, query)

    def native_id(self) -> str:
        found = self.inventory().get(self.case.label)
        expect(found is not None and found.get("NativeID"), f"{self.case.label} not in the inventory: {found}")
        assert found is not None  # for the type checker: expect() has just said so
        return str(found["NativeID"])

    def with_case(self, case: Case) -> Bench:
        return replace(self, case=case)


def agent_config(path: Path, case: Case, port: int) -> Path:
    """An agent on a SQLite file next to ``path`` whose synchronization and discovery run only when asked (the
    phases decide when), with fast retries; its ``cli`` block points at it, so ``--config`` serves both sides."""
    path.write_text(textwrap.dedent(f"""\
        amends "svc:/Config.pkl"
        import "plugins:/{case.namespace}.pkl"
        agent {{
          server {{ bindAddress = "127.0.0.1"; port = {port} }}
          datastore {{ sqlite {{ filePath = "{path.parent / 'svc.db'}" }} }}
          resourcePlugins {{ new {case.namespace}.PluginConfig {{ {case.plugin_config} }} }}
          retry {{ retryDelay = 50.ms; statusCheckInterval = 100.ms; maxRetries = 5 }}
          synchronization {{ enabled = false }}
          discovery {{ enabled = false }}
        }}
        cli {{ api {{ url = "http://localhost"; port = {port} }} }}
    """))
    return path


@contextmanager
def bench(case: Case, directory: Path) -> Iterator[Bench]:
    """An agent running ``case``'s plugin, for ``case`` and (``Bench.with_case``) any other case of that plugin."""
    port = free_port()
    agent = AgentProcess(agent_config(directory / "agent.pkl", case, port), port, directory / "agent.log").start()
    try:
        with DirectPlugin(case.namespace) as plugin:
            yield Bench(case, agent, directory, plugin)
    finally:
        agent.stop()


@contextmanager
def isolated_environment(directory: Path) -> Iterator[None]:
    """HOME, the XDG directories and the agent's PID file under ``directory`` while the kit runs, so that its agent
    and plugin processes touch nothing of the user's (their datastore, journals, a running agent)."""
    home = directory / "home"
    values = {"HOME": home, "XDG_DATA_HOME": home / "data", "XDG_CONFIG_HOME": home / "config",
              "XDG_STATE_HOME": home / "state", "SVC_PID_FILE": directory / "agent.pid"}
    saved: dict[str, Any] = {name: os.environ.get(name) for name in values}
    os.environ.update({name: str(value) for name, value in values.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
