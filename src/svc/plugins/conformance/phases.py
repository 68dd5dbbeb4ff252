"""The phases: one resource of a plugin, driven through every phase of its life by a real agent.

``run_conformance``:

    create → read → apply again (no changes) → update in place → replace on a create-only change → list
    → out-of-band change seen by read and by synchronization → out-of-band delete seen by read, by
    synchronization and (recreated with ``--force``, deleted again) by destroy ("already gone")
    → delete

``discovery_phase`` creates the resource out of band, has the agent discover it as unmanaged and adopts it from a
forma; ``extract_phase`` extracts it with the real ``svc extract`` and checks that the extracted forma changes
nothing. Each phase's outcome lands in ``case.results``; the first failure of a function ends it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from svc.forma import evaluate_forma
from svc.plugins.conformance import agent_api
from svc.plugins.conformance.bench import Bench, bench
from svc.plugins.conformance.case import Case, Json, expect, phase, skip
from svc.plugins.sdk import ErrorCode, Status

CRUD_PHASES = ("create", "read", "no-op", "update", "replace", "list", "out-of-band change", "out-of-band delete",
               "delete")
PHASES = (*CRUD_PHASES, "discovery", "adoption", "extract")


@contextmanager
def _bench_for(case: Case, directory: Path, shared: Bench | None, stack_suffix: str = "") -> Iterator[Bench]:
    """The shared bench (one agent for many cases) with this case, or an agent of the case's own. On a shared bench,
    a phase that runs besides the case's CRUD phases (``stack_suffix``) gets a stack of its own."""
    if shared is not None:
        yield shared.with_case(replace(case, stack=f"{case.stack}{stack_suffix}") if stack_suffix else case)
        return
    with bench(case, directory) as own:
        yield own


def _subset(actual: Json | None, expected: Json) -> bool:
    return actual is not None and all(actual.get(key) == value for key, value in expected.items())


def run_conformance(case: Case, directory: Path, shared: Bench | None = None) -> None:
    """``shared``: an agent already running the case's plugin (``bench(…)`` of an earlier case), reused.
    A case without a ``replace`` variant (a type with no create-only field) skips that phase."""
    with _bench_for(case, directory, shared) as b:
        with phase(case, "create"):
            expect(b.apply("base") is not None, "the first apply changed nothing")
            native_id = b.native_id()
            stored = b.inventory()[case.label]["Properties"]
            expect(_subset(stored, case.expected["base"]), f"stored {stored}, expected {case.expected['base']}")

        with phase(case, "read"):
            read = b.plugin.read(case, native_id)
            expect(read.error_code is None and _subset(read.properties, case.expected["base"]),
                   f"read {read}, expected {case.expected['base']}")

        with phase(case, "no-op"):
            again = b.apply("base")
            expect(again is None, f"applying the same forma again changed something: {again}")

        with phase(case, "update"):
            b.apply("update")
            expect(b.native_id() == native_id, "an in-place update changed the native id")
            read = b.plugin.read(case, native_id)
            expect(_subset(read.properties, case.expected["update"]),
                   f"read {read}, expected {case.expected['update']}")
            expect(_subset(b.inventory()[case.label]["Properties"], case.expected["update"]),
                   "the agent did not store the update")

        if "replace" not in case.resources:  # later phases use the updated resource as the "replace" one
            case.resources["replace"] = case.resources["update"]
            case.expected["replace"] = case.expected["update"]
            skip(case, "replace", "the case declares no create-only change")
        else:
            with phase(case, "replace"):
                b.apply("replace")
                replaced = b.native_id()
                expect(replaced != native_id, "a create-only change kept the native id")
                expect(b.plugin.read(case, native_id).error_code is ErrorCode.NOT_FOUND,
                       "the old resource is still there (a read of its native id did not answer NotFound)")
                expect(_subset(b.plugin.read(case, replaced).properties, case.expected["replace"]),
                       f"the new resource does not read back as {case.expected['replace']}")
                native_id = replaced

        with phase(case, "list"):
            listed = b.plugin.list_all(case)
            expect(native_id in listed, f"{native_id} not listed: {listed}")
            expect(len(listed) == len(set(listed)), f"a listing repeated ids: {listed}")

        with phase(case, "out-of-band change"):
            changed = case.change_out_of_band(native_id)
            read = b.plugin.read(case, native_id)
            expect(read.error_code is None and _subset(read.properties, changed), f"read {read}, expected {changed}")
            agent_api.synchronize(b.api)  # the agent stores what it reads as a new version
            stored = _stored_values(b.inventory()[case.label]["Properties"])
            expect(_subset(stored, changed), f"synchronization did not store {changed}: {stored}")

        with phase(case, "out-of-band delete"):
            case.delete_out_of_band(native_id)
            read = b.plugin.read(case, native_id)
            expect(read.error_code is ErrorCode.NOT_FOUND, f"a read of a deleted resource answered {read}")
            agent_api.synchronize(b.api)
            expect(case.label not in b.inventory(), "synchronization kept a resource the provider no longer has")
            b.apply("replace", force=True)  # the drift is reverted: what the forma declares comes back…
            native_id = b.native_id()
            case.delete_out_of_band(native_id)
            # …and deleted again, before a synchronization: a destroy finds it gone (a read first) and forgets it.
            b.destroy("replace")
            expect(case.label not in b.inventory(), "a destroy kept a resource that was already gone")

        with phase(case, "delete"):
            b.apply("base")
            native_id = b.native_id()
            expect(b.destroy("base") is not None, "the destroy deleted nothing")
            expect(case.label not in b.inventory(), "the destroyed resource is still in the inventory")
            expect(b.plugin.read(case, native_id).error_code is ErrorCode.NOT_FOUND,
                   "a read after the delete did not answer NotFound")
            expect(native_id not in b.plugin.list_all(case, page_size=100), "the deleted resource is still listed")


def _stored_values(properties: Json) -> Json:
    """Stored properties with value envelopes (``{"$value": …}``) as their values."""
    return {k: v["$value"] if isinstance(v, dict) and "$value" in v else v for k, v in properties.items()}


def discovery_phase(case: Case, directory: Path, shared: Bench | None = None) -> None:
    """The resource is created out of band (through the plugin), ``POST /api/v1/admin/discover`` finds it and
    stores it unmanaged in ``$unmanaged`` with its type and properties; a forma that declares it (``alias`` =
    its discovered label) then adopts it in place: same native id, nothing created."""
    with _bench_for(case, directory, shared, "-discovery") as b:
        case = b.case  # on its own stack when the bench is shared
        with phase(case, "discovery"):
            native_id = _create_out_of_band(b)
            targets = directory / f"{case.id}-targets.pkl"  # the target alone: a stack without resources is refused
            targets.write_text('amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\n' + textwrap.dedent(case.imports)
                               + f'\nforma {{\n  new svc.Target {{ label = "target"; config = {case.target} }}\n}}\n')
            agent_api.run(b.api, "apply", targets, mode="patch")
            agent_api.discover(b.api)
            unmanaged = b.resources("managed:false")
            found = [r for r in unmanaged if r.get("NativeID") == native_id and r["Type"] == case.resource_type]
            expect(len(found) == 1, f"{native_id} not discovered: {unmanaged}")
            [discovered] = found
            expect(discovered["Stack"] == "$unmanaged" and not discovered.get("Managed"), discovered)
            expect(_subset(discovered["Properties"], case.expected["base"]),
                   f"discovered {discovered['Properties']}, expected {case.expected['base']}")

        with phase(case, "adoption"):
            before = b.plugin.list_all(case, page_size=100)
            declaration = case.resources["base"].replace(f'label = "{case.label}"',
                                                         f'label = "{case.label}"; alias = "{discovered["Label"]}"', 1)
            adopting = b.with_case(replace(case, resources={**case.resources, "adopt": declaration}))
            adopting.apply("adopt")
            adopted = b.inventory()[case.label]
            expect(adopted["NativeID"] == native_id and adopted.get("Managed"), f"not adopted in place: {adopted}")
            expect(adopted["Ksuid"] == discovered["Ksuid"], "adoption minted a new identity")
            expect(sorted(b.plugin.list_all(case, page_size=100)) == sorted(before), "adoption created a resource")


def _create_out_of_band(b: Bench) -> str:
    """Creates the base resource through the plugin directly (its properties as ``svc eval`` renders them)."""
    if b.case.setup:  # the subject's parents, managed by svc; its references to them resolved from the inventory
        b.apply("setup")
    evaluated = evaluate_forma(b.forma("base")).to_json()  # what `svc eval --output-consumer machine` prints
    [resource] = [r for r in evaluated["Resources"] if r["Label"] == b.case.label]
    properties = _resolved(resource["Properties"], b.inventory() if b.case.setup else {})
    progress = b.plugin.create(b.case, "out-of-band", properties)
    expect(progress.status is Status.SUCCESS and progress.native_id, f"an out-of-band create answered {progress}")
    return progress.native_id


def _resolved(value: Any, inventory: dict[str, Json]) -> Any:
    """``value`` with each ``$res`` reference replaced by the stored property it names."""
    if isinstance(value, dict) and value.get("$res"):
        found = inventory[value["$label"]]
        stored = {**(found.get("ReadOnlyProperties") or {}), **found["Properties"]}.get(value["$property"])
        return stored["$value"] if isinstance(stored, dict) and "$value" in stored else stored
    if isinstance(value, dict):
        return {key: _resolved(item, inventory) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(item, inventory) for item in value]
    return value


def extract_phase(case: Case, directory: Path, shared: Bench | None = None) -> None:
    """The base resource applied, then ``svc extract --query stack:STACK FILE`` by the real CLI: FILE evaluates
    offline (as ``svc eval`` does) to the same resource, and a reconcile of it plans no changes, simulated and for
    real (what the provider filled in, such as defaults, is written out; secrets and write-only fields are handled
    so that nothing differs)."""
    with _bench_for(case, directory, shared, "-extract") as b:
        case = b.case  # on its own stack when the bench is shared
        with phase(case, "extract"):
            b.apply("base")
            extracted = directory / f"{case.id}-extracted.pkl"
            result = b.svc("extract", "--query", f"stack:{case.stack}", str(extracted), "--yes")
            expect(result.returncode == 0, result.stdout + result.stderr)
            count = len(b.inventory())  # the subject, and its setup's resources
            expect(f"Extracted {count} resource(s) to '{extracted}'" in result.stdout, result.stdout)
            [resource] = [r for r in evaluate_forma(extracted).to_json()["Resources"] if r["Label"] == case.label]
            expect((resource["Label"], resource["Type"], resource["Stack"]) == (case.label, case.resource_type,
                                                                                case.stack), resource)
            plan = agent_api.submit(b.api, "apply", extracted, mode="reconcile", simulate=True)["Simulation"]
            expect(plan["ChangesRequired"] is False,
                   f"the extracted forma plans changes: {plan}\n{extracted.read_text()}")
            again = agent_api.run(b.api, "apply", extracted, mode="reconcile")
            expect(again is None, f"the extracted forma changed something: {again}\n{extracted.read_text()}")
