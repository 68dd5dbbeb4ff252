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


def cache_home() -> Path:
    """``$XDG_CACHE_HOME/svc``, by default ``~/.cache/svc``: what svc keeps to save work, never needed."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "svc"


def write_private(path: Path, text: str, *, keep: int | None = None) -> None:
    """Replaces ``path`` by a file of ``text`` (mode 0600, atomically: a reader sees one file whole) in a private
    directory; with ``keep``, the directory then holds at most the ``keep`` latest-written ``*.json`` files."""
    import tempfile  # only when writing: most commands read what is cached, if anything

    private_dir(path.parent)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    if keep is not None:
        entries = sorted(path.parent.glob("*.json"), key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
        for stale in entries[keep:]:
            stale.unlink(missing_ok=True)
