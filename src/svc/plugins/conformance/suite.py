"""Running the kit on an installed plugin: its cases (from the plugin's own ``conformance`` module), every phase on
one agent, and a per-type, per-phase report.

A plugin ships its cases in ``<its package>/conformance.py``: a function ``cases(directory: Path) -> list[Case]``,
``directory`` a scratch directory the kit removes afterwards (a case keeps its provider's state there, e.g. a
target's root). ``svc plugin test`` and ``python -m svc.plugins.conformance`` run it; a pytest test runs it with
``check_plugin(NAMESPACE, tmp_path)``.
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from pathlib import Path

from svc.plugins.conformance.bench import Bench, bench, isolated_environment
from svc.plugins.conformance.case import Case, ConformanceFailure, Outcome, PhaseResult
from svc.plugins.conformance.phases import PHASES, discovery_phase, extract_phase, run_conformance
from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP, installed_plugins

CASES_MODULE = "conformance"  # <the plugin's package>.conformance
_NOT_RUN = PhaseResult(Outcome.SKIPPED, "not run: an earlier phase failed")


class KitError(Exception):
    """The kit cannot run (no such plugin, no cases, an unknown type): a message that says what to fix."""


@dataclass(frozen=True)
class Report:
    """What each phase came to, per resource type (in the order the cases came)."""

    namespace: str
    results: dict[str, dict[str, PhaseResult]]

    @property
    def passed(self) -> bool:
        return all(result.outcome is not Outcome.FAILED for phases in self.results.values()
                   for result in phases.values())

    def text(self) -> str:
        lines = []
        for resource_type, phases in self.results.items():
            lines.append(resource_type)
            for name in PHASES:
                result = phases.get(name, _NOT_RUN)
                detail = f"  ({result.detail})" if result.detail else ""
                lines.append(f"  {result.outcome:<8} {name}{detail}")
        failed = sum(result.outcome is Outcome.FAILED for phases in self.results.values() for result in
                     phases.values())
        verdict = (f"{self.namespace}: {failed} phase(s) failed" if failed else
                   f"{self.namespace}: every phase passed for {len(self.results)} type(s)")
        return "\n".join([*lines, verdict])


def namespace_of(plugin: str) -> str:
    """The namespace ``plugin`` names: a namespace (any case) installed here, or the directory of a plugin
    distribution (its ``pyproject.toml`` registers it in the ``svc.plugins`` entry-point group)."""
    installed = {found.namespace.upper(): found.namespace for found in installed_plugins()}
    path = Path(plugin)
    if (path / "pyproject.toml").is_file():
        with (path / "pyproject.toml").open("rb") as file:
            project = tomllib.load(file).get("project", {})
        registered = list(project.get("entry-points", {}).get(PLUGIN_ENTRY_POINT_GROUP, {}))
        if len(registered) != 1:
            raise KitError(f"{path / 'pyproject.toml'} registers {len(registered)} plugins in "
                           f"[project.entry-points.\"{PLUGIN_ENTRY_POINT_GROUP}\"]; the kit tests a distribution with "
                           "exactly one (name a namespace instead)")
        if registered[0].upper() not in installed:
            raise KitError(f"plugin {registered[0]} ({path}) is not installed in this environment: "
                           f"run pip install -e {path} first")
        return installed[registered[0].upper()]
    if plugin.upper() in installed:
        return installed[plugin.upper()]
    raise KitError(f"{plugin!r} is neither an installed plugin ({', '.join(installed) or 'none installed'}) nor a "
                   "plugin distribution's directory (with a pyproject.toml)")


def plugin_cases(namespace: str, directory: Path) -> list[Case]:
    """The cases plugin ``namespace`` ships (``<package>.conformance.cases(directory)``)."""
    entry = next((found for found in entry_points(group=PLUGIN_ENTRY_POINT_GROUP) if found.name == namespace), None)
    if entry is None:
        raise KitError(f"plugin {namespace} is not installed in this environment")
    module_name = f"{entry.module}.{CASES_MODULE}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise KitError(f"plugin {namespace} ships no conformance cases: add {module_name.replace('.', '/')}.py with "
                       "cases(directory) -> list[Case] (see the plugin authoring guide)") from None
    make: Callable[[Path], list[Case]] | None = getattr(module, "cases", None)
    if make is None:
        raise KitError(f"{module_name} has no cases(directory) function")
    cases = list(make(directory))
    if not cases:
        raise KitError(f"{module_name}.cases() returned no case")
    return cases


def selected(cases: list[Case], types: Sequence[str]) -> list[Case]:
    """The cases of ``types`` (all when none is named); an unknown type is an error naming the known ones."""
    if not types:
        return cases
    known = {case.resource_type.lower(): case.resource_type for case in cases}
    unknown = [name for name in types if name.lower() not in known]
    if unknown:
        raise KitError(f"no conformance case for {', '.join(unknown)}; the plugin's cases cover "
                       f"{', '.join(known.values())}")
    wanted = {name.lower() for name in types}
    return [case for case in cases if case.resource_type.lower() in wanted]


def check_plugin(plugin: str, directory: Path, types: Sequence[str] = (),
                 progress: Callable[[str], None] = lambda _: None) -> Report:
    """Runs every phase of plugin ``plugin`` (a namespace or a distribution's directory) for its cases of ``types``
    (all when empty), on one agent in ``directory``, with HOME and the agent's files under it; ``progress`` is told
    each type's outcome as it finishes."""
    directory.mkdir(parents=True, exist_ok=True)
    namespace = namespace_of(plugin)
    with isolated_environment(directory):
        cases = selected(plugin_cases(namespace, directory / "cases"), types)
        cases = [replace(case, stack=case.id) if case.stack == "conformance" else case for case in cases]
        with bench(cases[0], directory) as shared:
            for case in cases:
                progress(f"{case.resource_type}: running {len(PHASES)} phases…")
                _run_case(case, directory, shared)
                failed = [name for name, result in case.results.items() if result.outcome is Outcome.FAILED]
                progress(f"{case.resource_type}: " + (f"FAILED {', '.join(failed)}" if failed else "ok"))
    return Report(namespace, {case.resource_type: case.results for case in cases})


def _run_case(case: Case, directory: Path, shared: Bench) -> None:
    """Each group of phases runs even when an earlier group failed (they use stacks of their own)."""
    for group in (run_conformance, discovery_phase, extract_phase):
        try:
            group(case, directory, shared)
        except ConformanceFailure:
            pass  # the outcome is kept in case.results
        _clean_up(case, shared)


def _clean_up(case: Case, shared: Bench) -> None:
    """What a group left behind on its stack (the adopted resource; whatever a failure left), destroyed as far as
    the agent can: the next group declares the same resource, and one left over would make its create fail."""
    for suffix in ("", "-discovery", "-extract"):  # the stacks of the three groups (see phases._bench_for)
        b = shared.with_case(replace(case, stack=f"{case.stack}{suffix}"))
        for variant in ("replace", "base"):
            try:
                b.destroy(variant)
            except Exception:  # noqa: BLE001, S112 - best effort: the failure that matters is already reported
                continue
