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


def schema_cache_dir() -> Path:
    """Where extracted descriptors are kept: ``$SVC_SCHEMA_CACHE``, else ``svc/schemas`` in the user's cache
    directory."""
    if os.environ.get("SVC_SCHEMA_CACHE"):
        return Path(os.environ["SVC_SCHEMA_CACHE"])
    return cache_home() / "schemas"


def replace_file(path: Path, data: str | bytes, *, mode: int = 0o666) -> None:
    """Replaces ``path`` by a file of ``data`` (text as UTF-8) atomically: a reader sees the old file or the new one
    whole, never a part of it. ``mode`` as for ``os.open`` (the umask applies). The directory must exist; a failure
    (``OSError``) leaves ``path`` as it was and no temporary file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_private(path: Path, text: str, *, keep: int | None = None) -> None:
    """Replaces ``path`` by a file of ``text`` (mode 0600, atomically) in a private directory; with ``keep``, the
    directory then holds at most the ``keep`` latest-written ``*.json`` files."""
    private_dir(path.parent)
    replace_file(path, text, mode=0o600)
    if keep is not None:
        entries = sorted(path.parent.glob("*.json"), key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
        for stale in entries[keep:]:
            stale.unlink(missing_ok=True)
