"""Faulting in ahead the memory a forked process shares with its parent (``svc.cli.prefault``): after it, writing
to memory the parent had made takes no page faults; it stops when told to."""

from __future__ import annotations

import os
import resource
from collections.abc import Callable

import pytest

from svc.cli.prefault import prefault

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not os.path.exists("/proc/self/maps"),
                                reason="Linux's process memory")

_MIB = 1 << 20


def _faults_writing_in_a_child(before_writing: Callable[[], None]) -> int:
    """The minor faults a forked child takes writing one byte in each page of 32 MiB its parent wrote."""
    memory = bytearray(b"\1" * (32 * _MIB))
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.close(reading)
            before_writing()
            start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for at in range(0, len(memory), resource.getpagesize()):
                memory[at] = 2
            os.write(writing, str(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(writing)
    with os.fdopen(reading) as answer:
        faults = int(answer.read() or "-1")
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return faults


def _populate_supported() -> bool:
    return tuple(int(part) for part in os.uname().release.split(".")[:2] if part.isdigit()) >= (5, 14)


@pytest.mark.skipif(not _populate_supported(), reason="MADV_POPULATE_WRITE came with Linux 5.14")
def test_after_it_writes_take_no_faults() -> None:
    pages = 32 * _MIB // resource.getpagesize()
    assert _faults_writing_in_a_child(lambda: None) >= pages * 0.9  # each page copied at its first write
    assert _faults_writing_in_a_child(lambda: prefault(stop=lambda: False)) < pages * 0.05


def test_it_stops_when_told() -> None:
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2

    pages = 32 * _MIB // resource.getpagesize()
    assert _faults_writing_in_a_child(lambda: prefault(stop=stop)) >= pages * 0.9
