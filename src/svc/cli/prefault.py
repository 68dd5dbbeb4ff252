"""Faulting in, ahead of time, the memory a forked process shares with its parent (``prefault``).

A worker forked from the CLI server shares the server's memory copy-on-write: each page it writes (Python writes a
reference count on every object it touches) is copied at its first write, and each page of code it runs is mapped
at its first use. A no-op plan of 10 resources took ~2,100 such faults in its worker, ~7 ms of system CPU and ~10 ms
of its ~40. A spare worker, forked while the server waits, takes them before it is given a command:
``madvise(MADV_POPULATE_READ)`` (Linux 5.14) maps its code, ``MADV_POPULATE_WRITE`` copies its writable private
pages (the interpreter's heap, ~33 MiB of it after the CLI's imports: ~20 ms of system CPU, while nobody waits).
The spare then holds that private copy while it waits.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

_MADV_POPULATE_READ, _MADV_POPULATE_WRITE = 22, 23
_CHUNK = 1 << 20  # bytes populated between two looks at whether to stop (~0.6 ms)


def prefault(stop: Callable[[], bool]) -> None:
    """Maps this process's code, then copies its writable private memory, a chunk at a time until ``stop()`` says
    so (a command has come: the rest is faulted as it is used). An older kernel refuses the advice: the faults are
    then all taken as the memory is used, as without this."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            regions = [line.split(maxsplit=5) for line in maps]
    except OSError:
        return
    madvise = libc.madvise
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    code, data = [], []
    for region in regions:
        if len(region) < 5:
            continue
        name = region[5].strip() if len(region) > 5 else ""
        if name.startswith("[") and name not in ("[heap]", "[stack]"):  # [vvar], [vdso], [vsyscall]: the kernel's
            continue
        start, _, end = region[0].partition("-")
        span = (int(start, 16), int(end, 16))
        if region[1].startswith("r-x"):
            code.append(span)
        elif region[1].startswith("rw") and region[1].endswith("p"):
            data.append(span)
    for advice, spans in ((_MADV_POPULATE_READ, code), (_MADV_POPULATE_WRITE, data)):
        for begin, end in spans:
            for at in range(begin, end, _CHUNK):
                if stop():
                    return
                if madvise(at, min(_CHUNK, end - at), advice) != 0 and at == begin:
                    break  # refused (an older kernel, memory it cannot populate): leave this region to its faults
