"""Faulting in ahead the memory a forked process shares with its parent (``svc.cli.prefault``): after it, writing
to the pages it was told of takes no page faults, and only to those; it stops when told to; a process tells which
pages it wrote since it was forked."""

from __future__ import annotations

import ctypes
import marshal
import os
import resource
import socket
from collections.abc import Callable

import pytest

from svc.cli.prefault import Span, merged, prefault, read_report, report_written, written_ranges

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not os.path.exists("/proc/self/maps"),
                                reason="Linux's process memory")

_MIB = 1 << 20
_PAGE = resource.getpagesize()


def _in_a_child(memory: bytearray, before_writing: Callable[[], None]) -> tuple[int, list[Span], list[Span]]:
    """In a forked child: the minor faults it takes writing one byte in each page of ``memory`` (which the parent
    wrote) after ``before_writing()``, and what ``written_ranges`` says before and after those writes."""
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.close(reading)
            before_writing()
            before = written_ranges()
            start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for at in range(0, len(memory), _PAGE):
                memory[at] = 2
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start
            after = written_ranges()
            os.write(writing, marshal.dumps((faults, before, after)))
            code = 0
        finally:
            os._exit(code)
    os.close(writing)
    with os.fdopen(reading, "rb") as answer:
        faults, before, after = marshal.loads(answer.read())
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return faults, before, after


def _span(memory: bytearray) -> Span:
    begin = ctypes.addressof((ctypes.c_char * len(memory)).from_buffer(memory))
    first = -(-begin // _PAGE) * _PAGE  # whole pages only
    return first, (begin + len(memory)) // _PAGE * _PAGE


def _covers(spans: list[Span], inner: Span) -> bool:
    return any(begin <= inner[0] and inner[1] <= end for begin, end in merged(spans))


def _populate_supported() -> bool:
    return tuple(int(part) for part in os.uname().release.split(".")[:2] if part.isdigit()) >= (5, 14)


@pytest.mark.skipif(not _populate_supported(), reason="MADV_POPULATE_WRITE came with Linux 5.14")
def test_the_pages_it_is_told_of_take_no_faults_and_the_others_do() -> None:
    memory = bytearray(b"\1" * (32 * _MIB))
    pages = len(memory) // _PAGE
    span = _span(memory)
    faults, _, _ = _in_a_child(memory, lambda: None)
    assert faults >= pages * 0.9  # each page copied at its first write
    faults, _, _ = _in_a_child(memory, lambda: prefault(lambda: False, [span]))
    assert faults < pages * 0.05
    # A range a worker wrote may reach beyond what this process maps (it allocated more): what is mapped is copied.
    beyond = (span[0] - 64 * _MIB, span[1] + (1 << 40))
    faults, _, _ = _in_a_child(memory, lambda: prefault(lambda: False, [beyond]))
    assert faults < pages * 0.05
    faults, _, _ = _in_a_child(memory, lambda: prefault(lambda: False, []))
    assert faults >= pages * 0.9


def test_a_process_tells_the_pages_it_wrote_since_it_was_forked() -> None:
    memory = bytearray(b"\1" * (8 * _MIB))
    span = _span(memory)
    _, before, after = _in_a_child(memory, lambda: None)
    assert not any(begin < span[1] and span[0] < end for begin, end in before)
    assert _covers(after, span)
    assert after == merged(after)  # sorted, touching ranges joined


def test_it_stops_when_told() -> None:
    memory = bytearray(b"\1" * (32 * _MIB))
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2

    faults, _, _ = _in_a_child(memory, lambda: prefault(stop, [_span(memory)]))
    assert faults >= len(memory) // _PAGE * 0.9


def test_ranges_are_merged() -> None:
    assert merged([(30, 40), (0, 10), (10, 20), (15, 18), (35, 50)]) == [(0, 20), (30, 50)]
    assert merged([]) == []


def test_a_report_of_what_was_written_goes_through_whole_or_not_at_all() -> None:
    sender, receiver = socket.socketpair()
    try:
        report_written(sender)
        spans = read_report(receiver)
        assert spans and all(begin < end for begin, end in spans)  # this process maps its memory alone
        sender.sendall(b"\0\0\1\0" + marshal.dumps([(1, 2)]))  # shorter than it says
        assert read_report(receiver) == []
        sender.sendall(b"\0\0\0\3abc")
        assert read_report(receiver) == []
    finally:
        sender.close()
        receiver.close()
