"""Creations that take several AWS calls undo the first when a later one fails.

The agent learns a resource's native id only from a successful create. A role made by ``create_role``
whose inline policy is then refused would be left in the account, unknown to svc, and block the next
attempt with "already exists"; deleting it again keeps a failed create free of leftovers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_log = logging.getLogger("svc.plugin.aws")


@contextmanager
def undone_on_failure(what: str, undo: Callable[[], object]) -> Iterator[None]:
    """Runs the rest of a creation; if it raises, ``undo()`` (best effort) and the error goes on."""
    try:
        yield
    except BaseException:
        try:
            undo()
        except Exception as error:  # the original error matters more; say what is left behind
            _log.warning("could not delete %s again after its creation failed: %s", what, error)
        raise
