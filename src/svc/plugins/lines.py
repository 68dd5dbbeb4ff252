"""Protocol lines out to a pipe: everything one event-loop turn sends leaves in a single write.

The engine starts dozens of plugin calls in one turn (a wave of dependents), and a plugin answers as many
when their timers fire together. Written one by one, each line was a system call that woke the process at
the other end, and on the agent's event loop each call also gave up the GIL to whichever thread held it
next (the datastore's group commit), for up to the interpreter's switch interval. Queued and joined until
the turn ends, a wave costs one write and one wake-up.
"""

from __future__ import annotations

import asyncio

MAX_QUEUED = 8  # lines a burst holds back at most: the first waits for the next seven to be built (~1 ms)


class LineWriter:
    """Queues encoded lines and writes them at the end of the current loop turn, in order."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._queued: list[bytes] = []

    async def send(self, line: bytes) -> None:
        """Queues ``line``; returns once the pipe's buffer is below its high-water mark (back-pressure).
        Raises ``ConnectionResetError`` (or ``BrokenPipeError``) when the other end is gone."""
        if not self._queued:
            asyncio.get_running_loop().call_soon(self.flush)
        self._queued.append(line)
        if len(self._queued) >= MAX_QUEUED:
            self.flush()
        await self._writer.drain()

    def flush(self) -> None:
        """Writes what is queued now (the end of the turn does it anyway; a process about to exit must)."""
        if not self._queued:
            return
        data = b"".join(self._queued)
        self._queued.clear()
        if not self._writer.is_closing():
            self._writer.write(data)
