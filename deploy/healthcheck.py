#!/usr/bin/env python3
"""Container health probe: exit 0 when GET /api/v1/health answers 200, else 1 with one line.

The slim base image has no curl, and the same probe serves the image's HEALTHCHECK and the ECS task
definition's container health check. SVC_HEALTH_URL overrides the URL (e.g. https:// when the agent
serves TLS itself); certificates are not verified because the probe talks to its own container.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:49684/api/v1/health"


def probe(url: str, timeout: float) -> str | None:
    """Returns None when healthy, else why not."""
    # The agent's certificate names its public host, not 127.0.0.1; identity is not the question here.
    context = ssl._create_unverified_context() if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
            if response.status == 200:
                return None
            return f"{url} answered HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"{url} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{url} is not reachable: {reason}"


def main() -> int:
    url = os.environ.get("SVC_HEALTH_URL") or DEFAULT_URL
    problem = probe(url, timeout=float(os.environ.get("SVC_HEALTH_TIMEOUT", "4")))
    if problem is None:
        return 0
    print(f"svc-healthcheck: unhealthy: {problem}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
