"""Sortable unique ids (KSUIDs): time-ordered, 27 characters, URL-safe."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

# KSUID: 4 bytes of seconds since this epoch, then 16 random bytes, as 27 base62 digits (0-9A-Za-z).
_EPOCH = 1_400_000_000
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_DIGITS = 27


def new_id() -> str:
    """A KSUID, as the ``ksuid`` package makes them (the tests compare), minted here because its pure-Python
    base conversion took ~4 times as long, and the engine mints several ids per resource change."""
    value = ((int(time.time()) - _EPOCH) << 128) | int.from_bytes(secrets.token_bytes(16), "big")
    digits = []
    for _ in range(_DIGITS):
        value, digit = divmod(value, 62)
        digits.append(_BASE62[digit])
    return "".join(reversed(digits))


def persistent_id(path: Path) -> str:
    """The id stored in ``path``, created on first use (e.g. the agent id)."""
    if path.is_file():
        existing = path.read_text().strip()
        if existing:
            return existing
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    created = new_id()
    path.write_text(created + "\n")
    return created
