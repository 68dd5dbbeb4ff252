"""Where svc keeps its files on the local machine."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """``$XDG_DATA_HOME/svc``, by default ``~/.local/share/svc``: database, logs, ids."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "svc"


def pid_file() -> Path:
    """The running agent's PID file: ``$SVC_PID_FILE``, else ``<data dir>/agent.pid``."""
    return Path(os.environ.get("SVC_PID_FILE") or data_dir() / "agent.pid")


def private_dir(path: Path) -> Path:
    """Creates ``path`` (mode 0700) if needed and returns it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
