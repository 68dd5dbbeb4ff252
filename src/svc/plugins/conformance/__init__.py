"""The plugin conformance kit: a plugin's resource types driven through every phase of their life (create, read,
no-op, update, replace, list, out-of-band change and delete, delete, discovery and adoption, extract) by a real
agent, the plugin in its own process, as svc's own plugins are.

A plugin supplies ``Case``s (``<its package>/conformance.py``: ``cases(directory) -> list[Case]``); run them with
``svc plugin test``, ``python -m svc.plugins.conformance`` or, from a test, ``check_plugin``. The phase functions
(``run_conformance``, ``discovery_phase``, ``extract_phase``) run a case on an agent of its own or on a shared
``bench``.
"""

from svc.plugins.conformance.bench import Bench, bench
from svc.plugins.conformance.case import Case, ConformanceFailure, Outcome, PhaseResult, expect
from svc.plugins.conformance.phases import PHASES, discovery_phase, extract_phase, run_conformance
from svc.plugins.conformance.suite import KitError, Report, check_plugin

__all__ = ["PHASES", "Bench", "Case", "ConformanceFailure", "KitError", "Outcome", "PhaseResult", "Report", "bench",
           "check_plugin", "discovery_phase", "expect", "extract_phase", "run_conformance"]
