"""Sortable unique ids (KSUIDs): time-ordered, 27 characters, URL-safe."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

# KSUID: 4 bytes of seconds since this epoch, then 16 random bytes, as 27 base62 digits (0-9A-Za-z).
_EPOCH = 1_400_000_000
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_PAIRS = [high + low for high in _BASE62 for low in _BASE62]  # two digits per division: half as many
_RANDOM_BATCH = 256  # ids' worth of random bytes read from the OS at once


class _Entropy(threading.local):
    """Random bytes from the OS, fetched in batches. The engine's commit thread mints an id per resource
    version, and each ``os.urandom`` lets go of the GIL, which the thread then waits for behind the event loop
    (up to the interpreter's switch interval) while forcing the loop to hand it over: per id."""

    buffer = b""
    offset = 0

    def take(self) -> int:
        if self.offset >= len(self.buffer):
            self.buffer, self.offset = os.urandom(16 * _RANDOM_BATCH), 0
        start = self.offset
        self.offset = start + 16
        return int.from_bytes(self.buffer[start:start + 16], "big")


_entropy = _Entropy()
# A forked child must not mint ids from bytes its parent may still use (its one thread's batch is copied).
os.register_at_fork(after_in_child=lambda: _entropy.__dict__.clear())


def new_id() -> str:
    """A KSUID, as the ``ksuid`` package makes them (the tests compare), minted here because its pure-Python
    base conversion took ~4 times as long, and the engine mints several ids per resource change."""
    value = ((int(time.time()) - _EPOCH) << 128) | _entropy.take()
    pairs = []
    for _ in range(13):  # 26 of the 27 digits
        value, pair = divmod(value, 3844)
        pairs.append(_PAIRS[pair])
    pairs.append(_BASE62[value])
    return "".join(reversed(pairs))


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
