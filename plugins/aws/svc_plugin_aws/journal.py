"""What became of each mutating call, by the agent's request token, so a repeated call never acts twice.

An entry is written ``pending`` before the plugin calls AWS and ``done`` with the answer after, each write
atomic. A repeated token gets the stored answer; ``status`` of a token tells the agent, after a plugin
crash, whether the call arrived. A ``pending`` entry means the call may have reached AWS without its answer
being kept; the plugin then says so rather than act again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from svc.paths import data_dir

STATE_DIR_VARIABLE = "SVC_PLUGIN_STATE_DIR"  # set by the agent's plugin host
KEEP_SECONDS = 7 * 24 * 3600  # far longer than any command stays unfinished and resumable


def default_directory() -> Path:
    return Path(os.environ.get(STATE_DIR_VARIABLE) or data_dir() / "plugins" / "AWS") / "journal"


class Journal:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or default_directory()
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._prune()

    def _file(self, token: str) -> Path:
        return self.directory / f"{hashlib.sha256(token.encode()).hexdigest()[:40]}.json"

    def get(self, token: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._file(token).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):  # writes are atomic: a damaged file means "unknown"
            return None

    def begin(self, token: str, op: str, native_id: str) -> None:
        self._write(token, {"state": "pending", "op": op, "nativeId": native_id, "at": time.time()})

    def finish(self, token: str, op: str, native_id: str, result: dict[str, Any]) -> None:
        self._write(token, {"state": "done", "op": op, "nativeId": native_id, "at": time.time(), "result": result})

    def _write(self, token: str, entry: dict[str, Any]) -> None:
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(entry, file)
        os.replace(temporary, self._file(token))

    def _prune(self) -> None:
        horizon = time.time() - KEEP_SECONDS
        for entry in self.directory.iterdir():
            try:
                if entry.stat().st_mtime < horizon:
                    entry.unlink()
            except OSError:
                continue
