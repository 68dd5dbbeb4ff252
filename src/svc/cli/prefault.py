"""Faulting in, ahead of time, the memory a forked process shares with its parent (``prefault``), and learning which
of it a process wrote (``written_ranges``).

A worker forked from the CLI server shares the server's memory copy-on-write: each page it writes (Python writes a
reference count on every object it touches) is copied at its first write, and each page of code it runs is mapped
at its first use. A no-op plan of 10 resources took ~2,100 such faults in its worker, ~7 ms of system CPU and ~10 ms
of its ~40. A spare worker, forked while the server waits, takes them before it is given a command:
``madvise(MADV_POPULATE_READ)`` (Linux 5.14) maps its code, ``MADV_POPULATE_WRITE`` copies the pages the commands
before it wrote. Which those are, each worker tells as it ends (``written_ranges``: the pages only it maps, from
``/proc/self/pagemap``); copying the server's whole heap instead (~8,600 pages after the CLI's imports) took ~20 ms
of CPU for the ~2,000 a command writes, and left the spare holding a ~33 MiB copy of it while it waited.
"""

from __future__ import annotations

import ctypes
import marshal
import os
import socket
from collections.abc import Callable, Iterable, Sequence

_MADV_POPULATE_READ, _MADV_POPULATE_WRITE = 22, 23
_CHUNK = 1 << 20  # bytes populated between two looks at whether to stop (~0.6 ms)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_PRESENT, _EXCLUSIVE = 1 << 63, 1 << 56  # a /proc/PID/pagemap entry's bits: in memory; mapped by this process alone

MAX_SPANS = 4096  # page ranges in a worker's report of what it wrote (a few hundred is usual)

Span = tuple[int, int]  # [begin, end) addresses


def prefault(stop: Callable[[], bool], written: Sequence[Span]) -> None:
    """Maps this process's code, then copies the pages of its writable private memory within ``written`` (the
    ranges earlier workers wrote), a chunk at a time until ``stop()`` says so (a command has come: the rest is
    faulted as it is used). An older kernel refuses the advice: the faults are then all taken as the memory is
    used, as without this."""
    try:
        code, data = _mappings()
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    for advice, spans in ((_MADV_POPULATE_READ, code), (_MADV_POPULATE_WRITE, _within(written, data))):
        for begin, end in spans:
            for at in range(begin, end, _CHUNK):
                if stop():
                    return
                if madvise(at, min(_CHUNK, end - at), advice) != 0 and at == begin:
                    break  # refused (an older kernel, memory it cannot populate): leave this region to its faults


def written_ranges() -> list[Span]:
    """The ranges of this process's writable private memory that it alone maps: the pages it wrote since it was
    forked (or that ``prefault`` copied for it), and those it allocated. Empty where the kernel does not tell."""
    written: list[Span] = []
    try:
        _, data = _mappings()
        with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
            for begin, end in data:
                pagemap.seek(begin // _PAGE * 8)
                entries = memoryview(pagemap.read((end - begin) // _PAGE * 8)).cast("Q")
                mine = _PRESENT | _EXCLUSIVE
                for index, entry in enumerate(entries):
                    if entry & mine == mine:
                        address = begin + index * _PAGE
                        if written and written[-1][1] == address:
                            written[-1] = (written[-1][0], address + _PAGE)
                        else:
                            written.append((address, address + _PAGE))
    except (OSError, ValueError, TypeError):
        return []
    return written


def report_written(channel: socket.socket) -> None:
    """Sends on ``channel`` which pages this process wrote (``written_ranges``: a worker, as it ends, for the next
    spare to copy ahead); never waits (a report the channel cannot take at once is left out)."""
    try:
        report = marshal.dumps(written_ranges()[:MAX_SPANS])
        channel.setblocking(False)
        channel.sendall(len(report).to_bytes(4, "big") + report)
    except (OSError, ValueError):
        pass


def read_report(channel: socket.socket) -> list[Span]:
    """What a process that ended reported on ``channel`` (``report_written``); nothing unless a whole report."""
    data = b""
    channel.setblocking(False)
    try:
        while chunk := channel.recv(1 << 20):
            data += chunk
    except OSError:
        pass
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 or len(data) != 4 + size:
        return []
    try:
        return [(int(begin), int(end)) for begin, end in marshal.loads(data[4:])[:MAX_SPANS]]
    except (ValueError, EOFError, TypeError):
        return []


def merged(spans: Iterable[Span]) -> list[Span]:
    """The union of ``spans``, sorted, touching ones joined."""
    union: list[Span] = []
    for begin, end in sorted(spans):
        if union and begin <= union[-1][1]:
            union[-1] = (union[-1][0], max(end, union[-1][1]))
        else:
            union.append((begin, end))
    return union


def _mappings() -> tuple[list[Span], list[Span]]:
    """This process's code, and its writable private memory, from ``/proc/self/maps``."""
    code: list[Span] = []
    data: list[Span] = []
    with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
        for line in maps:
            region = line.split(maxsplit=5)
            if len(region) < 5:
                continue
            name = region[5].strip() if len(region) > 5 else ""
            if name.startswith("[") and name not in ("[heap]", "[stack]"):  # [vvar], [vdso]: the kernel's
                continue
            start, _, end = region[0].partition("-")
            span = (int(start, 16), int(end, 16))
            if region[1].startswith("r-x"):
                code.append(span)
            elif region[1].startswith("rw") and region[1].endswith("p"):
                data.append(span)
    return code, data


def _within(spans: Sequence[Span], mapped: Sequence[Span]) -> list[Span]:
    """The parts of ``spans`` inside ``mapped`` (both sorted): a range a worker allocated may not exist here."""
    inside: list[Span] = []
    at = 0
    for begin, end in mapped:
        while at < len(spans) and spans[at][1] <= begin:
            at += 1
        scan = at
        while scan < len(spans) and spans[scan][0] < end:
            inside.append((max(begin, spans[scan][0]), min(end, spans[scan][1])))
            scan += 1
    return inside
