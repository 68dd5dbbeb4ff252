"""``LineWriter``: the protocol lines an event-loop turn sends leave the process in one write, in order."""

from __future__ import annotations

import asyncio
import os

import pytest

from svc.plugins.lines import MAX_QUEUED, LineWriter


class CountingWriter(asyncio.StreamWriter):
    """A real pipe writer that remembers each write it was given."""

    writes: list[bytes]

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.writes.append(bytes(data))
        super().write(data)


async def _pipe() -> tuple[CountingWriter, int]:
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", 0))
    writer = CountingWriter(transport, protocol, None, loop)  # type: ignore[arg-type]
    writer.writes = []
    return writer, read_fd


def _received(read_fd: int) -> bytes:
    os.set_blocking(read_fd, False)
    try:
        return os.read(read_fd, 1 << 20)
    finally:
        os.close(read_fd)


def test_lines_sent_in_one_turn_leave_in_one_write_in_order() -> None:
    async def main() -> tuple[list[bytes], bytes]:
        writer, read_fd = await _pipe()
        lines = LineWriter(writer)
        await asyncio.gather(*(lines.send(f"line {i}\n".encode()) for i in range(5)))
        await asyncio.sleep(0)  # the turn ends
        writer.close()
        return writer.writes, _received(read_fd)

    writes, received = asyncio.run(main())
    assert writes == [b"line 0\nline 1\nline 2\nline 3\nline 4\n"]
    assert received == writes[0]


def test_a_long_burst_is_written_every_max_queued_lines_and_later_turns_write_again() -> None:
    async def main() -> tuple[list[bytes], bytes]:
        writer, read_fd = await _pipe()
        lines = LineWriter(writer)
        await asyncio.gather(*(lines.send(f"{i}\n".encode()) for i in range(MAX_QUEUED + 1)))
        await asyncio.sleep(0)
        await lines.send(b"later\n")
        await asyncio.sleep(0)
        writer.close()
        return writer.writes, _received(read_fd)

    writes, received = asyncio.run(main())
    assert [w.count(b"\n") for w in writes] == [MAX_QUEUED, 1, 1]
    assert received == b"".join(f"{i}\n".encode() for i in range(MAX_QUEUED + 1)) + b"later\n"


def test_flush_writes_at_once_and_a_closed_pipe_is_an_error_to_the_sender() -> None:
    async def main() -> list[bytes]:
        writer, read_fd = await _pipe()
        lines = LineWriter(writer)
        await lines.send(b"last words\n")
        lines.flush()  # what a plugin does before it exits
        written = list(writer.writes)
        os.close(read_fd)
        writer.close()
        with pytest.raises(ConnectionResetError):
            await lines.send(b"nobody listens\n")
        return written

    assert asyncio.run(main()) == [b"last words\n"]
