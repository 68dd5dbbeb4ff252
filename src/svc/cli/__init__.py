"""The ``svc`` command line interface."""

import sys

# httpx's package imports its own command-line tool (``httpx._main``: click, rich.progress, pygments) whenever
# those are installed, as they are here, for a ``main`` svc never calls: a fifth of a short command's start-up
# CPU. A ``None`` entry makes that import fail, and httpx falls back to its stub ``main`` (``httpx/__init__``).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
