"""The C allocator's arenas, limited for the agent.

glibc's malloc gives a thread that allocates while another holds the arena it used an arena of its own, up to
eight per CPU. The agent allocates on its event loop, its writer's commit thread, its checkpoint thread and the
worker threads that read the datastore and render answers; memory a big command's objects took in one arena
and freed stays with that arena, and another thread's next peak takes new pages in its own. Two arenas
(``MALLOC_ARENA_MAX=2``, set here in the running process) let the peaks reuse each other's freed memory: the
agent's peak RSS over a 20,000-resource apply, no-op and destroy went from 358 to 299 MiB, its CPU within the
noise (the threads mostly hold the GIL while they allocate, so they seldom contend for an arena).
"""

from __future__ import annotations

import ctypes
import os
import sys

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def limit_arenas() -> None:
    """Limits glibc's malloc to ``ARENAS`` arenas, unless ``MALLOC_ARENA_MAX`` says otherwise. Call it before the
    process starts threads; elsewhere than on glibc it does nothing."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask, or one without mallopt
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_ARENA_MAX, ARENAS)
