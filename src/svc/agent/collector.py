"""The agent's garbage-collector settings.

The agent allocates in bursts of many small, mostly long-lived objects (a 10,000-resource forma, its plan,
the changes in flight), and CPython's default thresholds (a young collection every 700 net allocations,
older generations scanned from there) then collect hundreds of times per command, each older collection
walking every live object: planning a 10,000-resource forma spent ~2 s of its ~3 s in the collector.
Larger thresholds keep the collector's work proportional to the garbage; reference counting frees almost
everything anyway (the collector only exists for cycles).
"""

from __future__ import annotations

import gc

# Young collections every 50,000 net allocations; the middle one every 20 of them; the oldest every 10 middle
# ones (and, as always, only once the objects awaiting it are a quarter of those already there).
THRESHOLDS = (50_000, 20, 10)


def tune_collector() -> None:
    """Sets the thresholds, and moves what exists now (modules, config, schemas: never garbage) out of the
    collector's sight. Call once the process has started up."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
