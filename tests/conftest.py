"""Shared fixtures: an isolated home, free ports, config files, a real agent process, the real CLI."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from support.cloudcontrol.client import StandIn, start_cloudcontrol
from support.processes import Agent, free_port

_RUNTIME_DIR = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """One schema cache for the whole run (every xdist worker, every agent it starts), kept between runs in
    pytest's cache directory: a test with a fresh HOME does not extract the AWS plugin's ~1,700 types again.
    Entries are keyed by the schema files' fingerprint, so an edited schema is extracted anew."""
    if "SVC_SCHEMA_CACHE" not in os.environ and config.cache is not None:
        os.environ["SVC_SCHEMA_CACHE"] = str(config.cache.mkdir("svc-schemas"))
    # The CLI servers the run's commands start (svc.launcher) live in a runtime directory of the run's own (its
    # xdist workers inherit it), and leave with the run rather than idle on for ten minutes.
    if "SVC_TESTS_RUNTIME_DIR" not in os.environ:
        runtime = tempfile.mkdtemp(prefix="svc-tests-run-")
        os.environ["SVC_TESTS_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"] = runtime
        config.stash[_RUNTIME_DIR] = runtime


def pytest_unconfigure(config: pytest.Config) -> None:
    runtime = config.stash.get(_RUNTIME_DIR, None)
    if runtime is None:
        return
    for lock in Path(runtime, "svc").glob("cli-*.lock"):
        try:
            os.kill(int(lock.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME (and XDG dirs, PID file) so tests never touch the user's files."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("SVC_PID_FILE", str(tmp_path / "agent.pid"))
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR", "SVC_TESTING_AGENT_VERSION"):
        monkeypatch.delenv(variable, raising=False)
    return home


@pytest.fixture
def write_pkl(tmp_path: Path):
    """Writes a Pkl file (dedented) and returns its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write


@pytest.fixture
def agent_factory(home: Path, tmp_path: Path, write_pkl) -> Iterator:
    """Makes agents from an ``agent { … }`` body; each gets a free port and is stopped afterwards.

    The config file also carries a matching ``cli`` block, so ``--config`` works for both sides;
    ``server`` adds members to ``agent.server`` (Pkl allows one ``server {}`` block per object).
    """
    agents: list[Agent] = []

    def make(agent_body: str = "", cli_body: str = "", scheme: str = "http", name: str | None = None,
             env: Mapping[str, str] | None = None, server: str = "") -> Agent:
        port = free_port()
        name = name or f"agent-{len(agents)}"
        config = write_pkl(f"{name}.pkl", f"""
            amends "svc:/Config.pkl"
            agent {{
              server {{ bindAddress = "127.0.0.1"; port = {port}; {server} }}
            {textwrap.indent(textwrap.dedent(agent_body), "  ")}
            }}
            cli {{
              api {{ url = "{scheme}://localhost"; port = {port} }}
            {textwrap.indent(textwrap.dedent(cli_body), "  ")}
            }}
        """)
        agent = Agent(config=config, port=port, log=tmp_path / f"{name}.log", env=dict(env or {}), scheme=scheme)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.stop()


FIXTURE_PLUGIN_PATH = Path(__file__).parent / "fixtures" / "plugin_pkg"


@pytest.fixture
def fixture_plugin(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Installs the FIXTURE plugin (tests/fixtures/plugin_pkg holds its package and dist-info) for
    this process and for the ``svc`` subprocesses it starts."""
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGIN_PATH))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FIXTURE_PLUGIN_PATH),
                                                                    os.environ.get("PYTHONPATH")])))
    return FIXTURE_PLUGIN_PATH


COMPAT_PLUGIN_PATH = Path(__file__).parent / "fixtures" / "compat_pkg"


@pytest.fixture
def compat_plugin(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Installs the COMPAT plugin (tests/fixtures/compat_pkg: a schema package in the original product's
    dialect, renamed) for this process and for the ``svc`` subprocesses it starts."""
    monkeypatch.syspath_prepend(str(COMPAT_PLUGIN_PATH))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(COMPAT_PLUGIN_PATH),
                                                                    os.environ.get("PYTHONPATH")])))
    return COMPAT_PLUGIN_PATH


@pytest.fixture(scope="module")
def cloudcontrol_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIn]:
    """The Cloud Control stand-in (``support.cloudcontrol``) as its own process, one per test module."""
    with start_cloudcontrol(tmp_path_factory.mktemp("cloudcontrol") / "cloudcontrol.log") as standin:
        yield standin


@pytest.fixture
def cloudcontrol(cloudcontrol_server: StandIn) -> StandIn:
    """The module's Cloud Control stand-in, emptied and with its faults and timing reset for this test."""
    cloudcontrol_server.reset()
    return cloudcontrol_server
