"""What the kit needs to know about one resource type of a plugin (a ``Case``), and how a phase's outcome is kept.

A plugin supplies its cases: how to declare one resource in Pkl (a base version, a mutable change and, when the
type has a create-only field, a create-only change), what its properties read back as, and how to change or delete
it behind svc's back. Checks raise ``ConformanceFailure`` (an ``AssertionError``, so pytest reports it as a failed
assertion); a plain ``assert`` would vanish under ``python -O``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]


class ConformanceFailure(AssertionError):
    """A plugin (or the agent driving it) did not do what a phase expects."""


def expect(condition: object, message: object) -> None:
    """Fails the running phase with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ConformanceFailure(str(message))


class Outcome(enum.StrEnum):
    PASSED = "ok"
    FAILED = "FAILED"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class PhaseResult:
    outcome: Outcome
    detail: str = ""


@dataclass
class Case:
    """One resource type of one plugin, as the phases need it."""

    id: str
    namespace: str
    resource_type: str
    imports: str  # Pkl import lines
    target: str  # a Pkl expression: the target's config
    target_config: Json  # the same config as the plugin receives it
    resources: dict[str, str]  # "base" / "update" / "replace" → one resource declaration in Pkl
    expected: dict[str, Json]  # the same keys → properties the plugin must read back (a subset)
    change_out_of_band: Callable[[str], Json]  # native id → changes the resource, returns the new properties
    delete_out_of_band: Callable[[str], None]
    label: str = "subject"
    stack: str = "conformance"  # cases sharing an agent each take a stack of their own
    setup: str = ""  # Pkl declaring resources the subject needs (a parent: `local net = …` and `net`), in every variant
    plugin_config: str = ""  # members of the plugin's PluginConfig in the agent config
    extra: dict[str, Any] = field(default_factory=dict)
    # What each phase came to, by phase name: filled in as the phases run (shared by copies made with ``replace``).
    results: dict[str, PhaseResult] = field(default_factory=dict)


@contextmanager
def phase(case: Case, name: str) -> Iterator[None]:
    """Runs one phase of ``case``: its outcome is kept in ``case.results``, and a failure names the phase."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - a plugin's crash fails the phase as a wrong answer does
        detail = str(error) if isinstance(error, AssertionError) else f"{type(error).__name__}: {error}"
        case.results[name] = PhaseResult(Outcome.FAILED, detail)
        raise ConformanceFailure(f"conformance phase {name!r} of {case.resource_type}: {detail}") from error
    case.results.setdefault(name, PhaseResult(Outcome.PASSED))


def skip(case: Case, name: str, why: str) -> None:
    case.results[name] = PhaseResult(Outcome.SKIPPED, why)
