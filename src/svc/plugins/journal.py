"""An idempotency journal for plugin authors: what became of each mutating call, by the agent's request token.

A stateless plugin uses it to answer the host's question after a crash ("did the call with this token
happen?") and to answer a repeated token with the first call's result instead of acting twice. An entry is
written ``pending`` before the call acts and ``done`` with the result after, each write atomic; a
``pending`` entry means the call may have half-happened (the plugin decides whether the same token may
finish it or must say so).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from svc.paths import data_dir

STATE_DIR_VARIABLE = "SVC_PLUGIN_STATE_DIR"  # set by the agent's plugin host
KEEP_SECONDS = 7 * 24 * 3600  # far longer than any command can stay unfinished and be resumed


def default_directory(namespace: str) -> Path:
    return Path(os.environ.get(STATE_DIR_VARIABLE) or data_dir() / "plugins" / namespace) / "journal"


class Journal:
    """Cheap to make: the directory is found (and old entries pruned) on first use, because the agent's host
    sets the state directory in the plugin's environment before its first call, not before it is loaded."""

    def __init__(self, namespace: str, directory: Path | None = None) -> None:
        self._namespace = namespace
        self._given = directory

    @functools.cached_property
    def directory(self) -> Path:
        directory = self._given or default_directory(self._namespace)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        _prune(directory)
        return directory

    def _file(self, token: str) -> Path:
        return self.directory / f"{hashlib.sha256(token.encode()).hexdigest()[:40]}.json"

    def get(self, token: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._file(token).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):  # writes are atomic: a damaged file means "unknown"
            return None

    def begin(self, token: str, op: str, native_id: str) -> None:
        self._write(token, {"state": "pending", "op": op, "nativeId": native_id, "at": time.time()})

    def finish(self, token: str, op: str, native_id: str, result: dict[str, Any], *, follow: str = "") -> None:
        """``follow``: the provider's own handle on a call it finishes later (what the plugin asks it about)."""
        entry = {"state": "done", "op": op, "nativeId": native_id, "at": time.time(), "result": result}
        if follow:
            entry["follow"] = follow
        self._write(token, entry)

    def _write(self, token: str, entry: dict[str, Any]) -> None:
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(entry, file)
        os.replace(temporary, self._file(token))


def _prune(directory: Path) -> None:
    horizon = time.time() - KEEP_SECONDS
    for entry in directory.iterdir():
        try:
            if entry.stat().st_mtime < horizon:
                entry.unlink()
        except OSError:  # another thread pruned it first
            continue
