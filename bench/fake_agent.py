"""What the agent benches share: a real agent on SQLite in a temp dir with the FAKE plugin, and its peak RSS."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.processes import Agent, free_port  # noqa: E402

FAST_RETRY = "retry { retryDelay = 50.ms; statusCheckInterval = 100.ms; maxRetries = 5 }"


def start_fake_agent(directory: Path, *, plugin_config: str = "", retry: str = FAST_RETRY) -> Agent:
    """Starts an agent whose background jobs are off (benches time the passes they ask for); it has its own
    PID file and data dir, so another agent may run on this machine."""
    port = free_port()
    config = directory / "agent.pkl"
    config.write_text(textwrap.dedent(f"""\
        amends "svc:/Config.pkl"
        import "plugins:/FAKE.pkl"
        agent {{
          server {{ bindAddress = "127.0.0.1"; port = {port} }}
          datastore {{ sqlite {{ filePath = "{directory / 'svc.db'}" }} }}
          resourcePlugins {{ new FAKE.PluginConfig {{ {plugin_config} }} }}
          {retry}
          synchronization {{ enabled = false }}
          discovery {{ enabled = false }}
        }}
        cli {{ api {{ url = "http://localhost"; port = {port} }} }}
    """))
    env = {"SVC_PID_FILE": str(directory / "agent.pid"), "XDG_DATA_HOME": str(directory / "data")}
    return Agent(config=config, port=port, log=directory / "agent.log", env=env).start()


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
