"""The PID file that lets ``svc agent stop`` find the running agent."""

from __future__ import annotations

import os
from pathlib import Path


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_pid(path: Path) -> int | None:
    """The PID recorded in ``path`` if that process is alive; a stale file is removed."""
    try:
        pid = int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        path.unlink(missing_ok=True)
        return None
    if is_alive(pid):
        return pid
    path.unlink(missing_ok=True)
    return None


def write_pid(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(f"{os.getpid()}\n")


def remove_pid(path: Path) -> None:
    try:
        if int(path.read_text().strip()) == os.getpid():
            path.unlink()
    except (FileNotFoundError, ValueError):
        pass
