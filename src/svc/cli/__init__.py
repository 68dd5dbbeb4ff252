"""The ``svc`` command line interface.

Every command (and ``svc agent start``, which becomes the agent) first imports a few hundred modules; with
CPython's default collector thresholds the collector walked what they made again and again meanwhile, about a
tenth of a start's CPU. So the collector runs on the agent's thresholds from here on (the agent then also moves
what its start made out of the collector's sight: ``svc.collector``).
"""

import gc
import sys

from svc.collector import THRESHOLDS

gc.set_threshold(*THRESHOLDS)

# httpx's package imports its own command-line tool (``httpx._main``: click, rich.progress, pygments) whenever
# those are installed, as they are here, for a ``main`` svc never calls. The commands no longer import httpx
# (``svc.cli.http``); ``svc agent start`` does, to forward to a leader, and the stub spares its start that import.
# A ``None`` entry makes that import fail, and httpx falls back to its stub ``main`` (``httpx/__init__``).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
