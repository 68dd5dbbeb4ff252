"""A line on the terminal while the CLI waits on something slow: a large forma's evaluation (Pkl takes ~13 s for
100,000 resources), the agent's plan of it (several seconds more), before anything else can be printed.

Nothing is shown for a wait that ends within ``DELAY`` seconds (what most commands wait), nor where standard error
is not a terminal (a log, a pipe); the line says how long the wait has lasted, once a second, and is erased when the
wait ends, before the command prints anything else.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

DELAY = 1.0  # seconds of waiting before the line appears
PLANNING = "the agent is planning"  # what a submission waits for
ERASE = "\r\x1b[2K"  # back to the line's start, and clear it


@contextmanager
def waiting_line(text: str, *, stream: TextIO | None = None, delay: float | None = None) -> Iterator[None]:
    """Shows ``text`` (``evaluating main.pkl``) and the seconds waited so far on ``stream`` (standard error) while
    the block runs longer than ``delay`` seconds (``DELAY``), if ``stream`` is a terminal."""
    stream = stream if stream is not None else sys.stderr
    delay = DELAY if delay is None else delay
    if not _is_terminal(stream):
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def show() -> None:
        if done.wait(delay):
            return
        while True:
            stream.write(f"{ERASE}{text}... {time.monotonic() - started:.0f}s")
            stream.flush()
            if done.wait(1.0):
                break
        stream.write(ERASE)
        stream.flush()

    shower = threading.Thread(target=show, name="svc-waiting-line", daemon=True)
    shower.start()
    try:
        yield
    finally:
        done.set()
        shower.join()  # the line is gone before the caller prints


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
