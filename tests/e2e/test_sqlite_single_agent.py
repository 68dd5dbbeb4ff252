"""SQLite serves one agent: a second agent started on the same database file fails at once with one line, and can
start once the first is gone, even when the first was killed (the kernel drops its lock)."""

from __future__ import annotations

import signal
from pathlib import Path

from support.processes import run_svc


def test_a_second_agent_on_one_sqlite_file_is_refused_until_the_first_is_gone(agent_factory, tmp_path: Path) -> None:
    database = tmp_path / "shared" / "svc.db"
    body = f'datastore {{ sqlite {{ filePath = "{database}" }} }}'
    first = agent_factory(body).start()
    # Its own PID file, so that only the datastore can refuse it (one agent per PID file is another check).
    second = agent_factory(body, env={"SVC_PID_FILE": str(tmp_path / "second.pid")})

    refused = run_svc("agent", "start", "--config", str(second.config), env=second.env, timeout=60)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"Error: the SQLite datastore {database} is in use by another agent (PID {first.process.pid}); SQLite serves "
        "one agent: to run several agents on one datastore, use PostgreSQL or the Aurora Data API")

    first.process.send_signal(signal.SIGKILL)  # no clean-up runs: the lock goes with the process
    first.wait_exit()
    second.start()
    assert second.process.poll() is None
