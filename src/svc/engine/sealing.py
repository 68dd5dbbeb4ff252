"""Secrets a command still needs, sealed at rest: the desired state of a resource change that holds
plain-text secrets is stored encrypted (Fernet) with the agent's key, so a command resumed after a
crash can still send them, and the datastore never holds them in plain text. The key lives in a
file only the agent's user can read; without it a sealed state cannot be opened (the change then
fails with a message asking to apply again)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken


class SealError(Exception):
    """A sealed value cannot be opened (another agent's key, or a lost key file)."""


def is_sealing_key(key: str) -> bool:
    try:
        Fernet(key.encode())
    except ValueError:
        return False
    return True


class Sealer:
    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_file(cls, path: Path) -> Sealer:
        """The key in ``path``, created (mode 0600) on first use."""
        if path.is_file():
            return cls(path.read_bytes().strip())
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        key = Fernet.generate_key()
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(key)
        return cls(key)

    def seal(self, value: Any) -> str:
        return self._fernet.encrypt(json.dumps(value).encode()).decode()

    def open(self, token: str) -> Any:
        try:
            return json.loads(self._fernet.decrypt(token.encode()))
        except InvalidToken as error:
            raise SealError("a sealed secret cannot be opened with this agent's key") from error
