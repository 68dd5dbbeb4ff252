"""The kit as a command (``svc plugin test``, ``python -m svc.plugins.conformance``): progress on stderr as each type
finishes, the per-type, per-phase report on stdout, and an exit code."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from svc.plugins.conformance.suite import check_plugin

PASSED, FAILED = 0, 1


def run(plugin: str, types: Sequence[str], keep: Path | None = None) -> int:
    """Runs the kit on ``plugin`` and prints its report: ``PASSED`` (0) or ``FAILED`` (1). Raises ``KitError`` when
    it cannot run at all. ``keep``: run in that directory and leave it (the agent's log and database, the formas);
    otherwise in a temporary one, removed afterwards."""
    directory = keep or Path(tempfile.mkdtemp(prefix="svc-conformance-"))
    try:
        report = check_plugin(plugin, directory, types,
                              progress=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        if keep is None:
            shutil.rmtree(directory, ignore_errors=True)
    print(report.text())
    return PASSED if report.passed else FAILED
