"""A reusable plugin conformance suite: one resource of a plugin, driven through every phase of its life.

A plugin supplies a ``Case``: how to declare one resource in Pkl (a base version, a mutable change and a
create-only change), what its properties read back as, and how to change or delete it behind svc's back.
``run_conformance`` then drives it through a real agent (the plugin in its own process, through the
subprocess host), submitting formas through the agent's HTTP API as the CLI does (``support.api``: the CLI is
not what is under test here, and a CLI process per step would cost a second each), and talks to the plugin
directly through a second real host, as the reference harness does, for reads and lists:

    create → read → apply again (no changes) → update in place → replace on a create-only change → list
    → out-of-band change seen by read and by synchronization → out-of-band delete seen by read, by
    synchronization and (recreated with ``--force``, deleted again) by destroy ("already gone")
    → delete

``discovery_phase`` creates the resource out of band, has the agent discover it as unmanaged and adopts it
from a forma. Phases the next engineer adds (extract round trip) are hooks that skip with a TODO, so the
matrix shows them.
"""

from __future__ import annotations

import asyncio
import textwrap
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import httpx

from support import api
from support.processes import Agent, free_port, run_svc
from svc.forma import evaluate_forma
from svc.plugins.host import HostedPlugin
from svc.plugins.installed import installed_plugins
from svc.plugins.runner import Call
from svc.plugins.sdk import ErrorCode, ListResult, ReadResult, Status

T = TypeVar("T")
Json = dict[str, Any]
PHASES = ("create", "read", "no-op", "update", "replace", "list", "out-of-band change", "out-of-band delete",
          "delete", "discovery", "extract")


@dataclass
class Case:
    """One resource type of one plugin, as the suite needs it."""

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


# -- the plugin, driven directly through the real subprocess host -----------------------------------------------

class DirectPlugin:
    """A ``HostedPlugin`` of its own, on an event loop in a thread, called synchronously by tests."""

    def __init__(self, namespace: str) -> None:
        version = next((p.version for p in installed_plugins() if p.namespace == namespace), "")
        self.host = HostedPlugin(namespace, version, {})
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def __enter__(self) -> DirectPlugin:
        self.thread.start()
        self.run(self.host.start())
        return self

    def __exit__(self, *_: object) -> None:
        self.run(self.host.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def read(self, case: Case, native_id: str) -> ReadResult:
        return self.run(self.host.read(Call(case.resource_type, case.target_config, 30.0), native_id, None))

    def list_all(self, case: Case, page_size: int = 1) -> list[str]:
        """Every native id of the type, page by page (small pages: paging is part of the contract)."""
        ids: list[str] = []
        token: str | None = None
        for _ in range(10_000):
            page: ListResult = self.run(self.host.list(Call(case.resource_type, case.target_config, 30.0),
                                                       page_size, token, {}))
            assert len(page.native_ids) <= page_size, f"a page of {page_size} held {len(page.native_ids)} ids"
            ids.extend(page.native_ids)
            token = page.next_page_token
            if not token:
                return ids
        raise AssertionError("list never ended")


# -- the agent ------------------------------------------------------------------------------------------------

@dataclass
class Bench:
    case: Case
    agent: Agent
    directory: Path
    plugin: DirectPlugin

    def svc(self, *args: str, timeout: float = 120) -> Any:
        return run_svc(*args, "--config", str(self.agent.config), env={"COLUMNS": "200"}, timeout=timeout)

    def forma(self, variant: str | None) -> Path:
        path = self.directory / f"{self.case.id}-{variant or 'empty'}.pkl"
        body = "" if variant is None else textwrap.dedent(self.case.setup) + "\n" + (
            "" if variant == "setup" else textwrap.dedent(self.case.resources[variant]))
        path.write_text(
            'amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\n' + textwrap.dedent(self.case.imports) + "\n"
            "forma {\n"
            f'  new svc.Stack {{ label = "{self.case.stack}" }}\n'
            f'  new svc.Target {{ label = "target"; config = {self.case.target} }}\n'
            + textwrap.indent(textwrap.dedent(body), "  ") + "\n}\n")
        return path

    @property
    def api(self) -> str:
        return f"{self.agent.url}/api/v1"

    def apply(self, variant: str, mode: str = "reconcile", *, force: bool = False) -> Json | None:
        """``svc apply --mode MODE VARIANT --yes --wait`` through the API: the finished command, which succeeded;
        None when nothing needed to change."""
        return api.run(self.api, "apply", self.forma(variant), mode=mode, force=force)

    def destroy(self, variant: str) -> Json | None:
        """``svc destroy VARIANT --yes --wait`` through the API, as ``apply``."""
        return api.run(self.api, "destroy", self.forma(variant), on_dependents="abort")

    def cli_apply(self, variant: str) -> Any:
        """``svc apply --mode reconcile VARIANT --yes --wait`` by the real CLI (what it prints is under test)."""
        result = self.svc("apply", "--mode", "reconcile", str(self.forma(variant)), "--yes", "--wait")
        assert result.returncode == 0, f"apply {variant} failed:\n{result.stdout}{result.stderr}"
        return result

    def inventory(self) -> dict[str, Json]:
        """The stack's resources by label, from the API that ``svc inventory resources`` prints (asked directly:
        a CLI process per look costs a second, and a case looks a dozen times)."""
        return {resource["Label"]: resource for resource in self.resources(f"stack:{self.case.stack}")}

    def resources(self, query: str) -> list[Json]:
        """``svc inventory resources --query QUERY``: the API's answer."""
        response = httpx.get(f"{self.api}/resources", params={"query": query}, timeout=60)
        if response.status_code == 404:  # nothing found
            return []
        assert response.status_code == 200, response.text
        return response.json()["Resources"]

    def native_id(self) -> str:
        found = self.inventory().get(self.case.label)
        assert found is not None and found.get("NativeID"), f"{self.case.label} not in the inventory: {found}"
        return found["NativeID"]


def agent_config(path: Path, case: Case, port: int) -> Path:
    path.write_text(textwrap.dedent(f"""\
        amends "svc:/Config.pkl"
        import "plugins:/{case.namespace}.pkl"
        agent {{
          server {{ bindAddress = "127.0.0.1"; port = {port} }}
          datastore {{ sqlite {{ filePath = "{path.parent / 'svc.db'}" }} }}
          resourcePlugins {{ new {case.namespace}.PluginConfig {{ {case.plugin_config} }} }}
          retry {{ retryDelay = 50.ms; statusCheckInterval = 100.ms; maxRetries = 5 }}
          synchronization {{ enabled = false }}
          discovery {{ enabled = false }}
        }}
        cli {{ api {{ url = "http://localhost"; port = {port} }} }}
    """))
    return path


@contextmanager
def bench(case: Case, directory: Path) -> Iterator[Bench]:
    port = free_port()
    config = agent_config(directory / "agent.pkl", case, port)
    agent = Agent(config=config, port=port, log=directory / "agent.log").start()
    try:
        with DirectPlugin(case.namespace) as plugin:
            yield Bench(case, agent, directory, plugin)
    finally:
        agent.stop()


@contextmanager
def phase(name: str) -> Iterator[None]:
    try:
        yield
    except AssertionError as error:
        raise AssertionError(f"conformance phase {name!r}: {error}") from error


def _subset(actual: Json | None, expected: Json) -> bool:
    return actual is not None and all(actual.get(key) == value for key, value in expected.items())


# -- the phases -----------------------------------------------------------------------------------------------

@contextmanager
def _bench_for(case: Case, directory: Path, shared: Bench | None, stack_suffix: str = "") -> Iterator[Bench]:
    """The shared bench (one agent for a module's cases) with this case, or an agent of the case's own. On a
    shared bench, a phase that runs besides the case's CRUD phases (``stack_suffix``) gets a stack of its own."""
    if shared is not None:
        yield replace(shared, case=replace(case, stack=f"{case.stack}{stack_suffix}") if stack_suffix else case)
        return
    with bench(case, directory) as own:
        yield own


def run_conformance(case: Case, directory: Path, shared: Bench | None = None) -> None:
    """``shared``: an agent already running the case's plugin (``bench(…)`` of an earlier case), reused.
    A case without a ``replace`` variant (a type with no create-only field) skips that phase."""
    with _bench_for(case, directory, shared) as b:
        with phase("create"):
            assert b.apply("base") is not None, "the first apply changed nothing"
            native_id = b.native_id()
            stored = b.inventory()[case.label]["Properties"]
            assert _subset(stored, case.expected["base"]), stored

        with phase("read"):
            read = b.plugin.read(case, native_id)
            assert read.error_code is None and _subset(read.properties, case.expected["base"]), read

        with phase("no-op"):
            again = b.apply("base")
            assert again is None, f"applying the same forma again changed something: {again}"

        with phase("update"):
            b.apply("update")
            assert b.native_id() == native_id, "an in-place update changed the native id"
            read = b.plugin.read(case, native_id)
            assert _subset(read.properties, case.expected["update"]), read
            assert _subset(b.inventory()[case.label]["Properties"], case.expected["update"])

        with phase("replace"):
            if "replace" not in case.resources:  # later phases use the updated resource as the "replace" one
                case.resources["replace"] = case.resources["update"]
                case.expected["replace"] = case.expected["update"]
            else:
                b.apply("replace")
                replaced = b.native_id()
                assert replaced != native_id, "a create-only change kept the native id"
                assert b.plugin.read(case, native_id).error_code is ErrorCode.NOT_FOUND, "the old one is still there"
                assert _subset(b.plugin.read(case, replaced).properties, case.expected["replace"])
                native_id = replaced

        with phase("list"):
            listed = b.plugin.list_all(case)
            assert native_id in listed, f"{native_id} not listed: {listed}"
            assert len(listed) == len(set(listed)), f"a listing repeated ids: {listed}"

        with phase("out-of-band change"):
            changed = case.change_out_of_band(native_id)
            read = b.plugin.read(case, native_id)
            assert read.error_code is None and _subset(read.properties, changed), read
            _synchronize(b)  # the agent stores what it reads as a new version (drift: see tests/e2e/test_drift.py)
            stored = _stored_values(b.inventory()[case.label]["Properties"])
            assert _subset(stored, changed), f"synchronization did not store {changed}: {stored}"

        with phase("out-of-band delete"):
            case.delete_out_of_band(native_id)
            read = b.plugin.read(case, native_id)
            assert read.error_code is ErrorCode.NOT_FOUND, read
            _synchronize(b)
            assert case.label not in b.inventory(), "synchronization kept a resource the provider no longer has"
            b.apply("replace", force=True)  # the drift is reverted: what the forma declares comes back…
            native_id = b.native_id()
            case.delete_out_of_band(native_id)
            # …and deleted again, before a synchronization: a destroy finds it gone (a read first) and forgets it.
            b.destroy("replace")
            assert case.label not in b.inventory()

        with phase("delete"):
            b.apply("base")
            native_id = b.native_id()
            assert b.destroy("base") is not None, "the destroy deleted nothing"
            assert case.label not in b.inventory()
            assert b.plugin.read(case, native_id).error_code is ErrorCode.NOT_FOUND
            assert native_id not in b.plugin.list_all(case, page_size=100)


def _synchronize(b: Bench) -> None:
    """``POST /admin/synchronize``: one synchronization pass, answered when it ends."""
    response = httpx.post(f"{b.agent.url}/api/v1/admin/synchronize", timeout=120)
    assert response.status_code == 200, response.text


def _stored_values(properties: Json) -> Json:
    """Stored properties with value envelopes (``{"$value": …}``) as their values."""
    return {k: v["$value"] if isinstance(v, dict) and "$value" in v else v for k, v in properties.items()}


def discovery_phase(case: Case, directory: Path, shared: Bench | None = None) -> None:
    """The resource is created out of band (through the plugin), ``POST /api/v1/admin/discover`` finds it and
    stores it unmanaged in ``$unmanaged`` with its type and properties; a forma that declares it (``alias`` =
    its discovered label) then adopts it in place: same native id, nothing created."""
    with _bench_for(case, directory, shared, "-discovery") as b:
        case = b.case  # on its own stack when the bench is shared
        with phase("discovery"):
            native_id = _create_out_of_band(b)
            targets = directory / f"{case.id}-targets.pkl"  # the target alone: a stack without resources is refused
            targets.write_text('amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\n' + textwrap.dedent(case.imports)
                               + f'\nforma {{\n  new svc.Target {{ label = "target"; config = {case.target} }}\n}}\n')
            api.run(b.api, "apply", targets, mode="patch")
            response = httpx.post(f"{b.api}/admin/discover", timeout=120)
            assert response.status_code == 200, response.text
            unmanaged = b.resources("managed:false")
            found = [r for r in unmanaged if r.get("NativeID") == native_id and r["Type"] == case.resource_type]
            assert len(found) == 1, f"{native_id} not discovered: {unmanaged}"
            [discovered] = found
            assert discovered["Stack"] == "$unmanaged" and not discovered.get("Managed"), discovered
            assert _subset(discovered["Properties"], case.expected["base"]), discovered

        with phase("adoption"):
            before = b.plugin.list_all(case, page_size=100)
            declaration = case.resources["base"].replace(f'label = "{case.label}"',
                                                         f'label = "{case.label}"; alias = "{discovered["Label"]}"', 1)
            adopting = Bench(replace(case, resources={**case.resources, "adopt": declaration}), b.agent, directory,
                             b.plugin)
            adopting.apply("adopt")
            adopted = b.inventory()[case.label]
            assert adopted["NativeID"] == native_id and adopted.get("Managed"), adopted
            assert adopted["Ksuid"] == discovered["Ksuid"], "adoption minted a new identity"
            assert sorted(b.plugin.list_all(case, page_size=100)) == sorted(before), "adoption created a resource"


def _create_out_of_band(b: Bench) -> str:
    """Creates the base resource through the plugin directly (its properties as ``svc eval`` renders them)."""
    if b.case.setup:  # the subject's parents, managed by svc; its references to them resolved from the inventory
        b.apply("setup")
    evaluated = evaluate_forma(b.forma("base")).to_json()  # what `svc eval --output-consumer machine` prints
    [resource] = [r for r in evaluated["Resources"] if r["Label"] == b.case.label]
    properties = _resolved(resource["Properties"], b.inventory() if b.case.setup else {})
    call = Call(b.case.resource_type, b.case.target_config, 30.0)
    progress = b.plugin.run(b.plugin.host.create(call, "out-of-band", properties))
    assert progress.status is Status.SUCCESS and progress.native_id, progress
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
    """The base resource applied, then ``svc extract --query stack:conformance FILE`` by the real CLI: FILE
    evaluates offline (as ``svc eval`` does) to the same resource, and a reconcile of it plans no changes,
    simulated and for real (what the provider filled in, such as defaults, is written out; secrets and
    write-only fields are handled so that nothing differs)."""
    with _bench_for(case, directory, shared, "-extract") as b:
        case = b.case  # on its own stack when the bench is shared
        with phase("extract"):
            b.apply("base")
            extracted = directory / f"{case.id}-extracted.pkl"
            result = b.svc("extract", "--query", f"stack:{case.stack}", str(extracted), "--yes")
            assert result.returncode == 0, result.stdout + result.stderr
            count = len(b.inventory())  # the subject, and its setup's resources
            assert f"Extracted {count} resource(s) to '{extracted}'" in result.stdout, result.stdout
            [resource] = [r for r in evaluate_forma(extracted).to_json()["Resources"] if r["Label"] == case.label]
            assert (resource["Label"], resource["Type"], resource["Stack"]) == (case.label, case.resource_type,
                                                                                case.stack), resource
            plan = api.submit(b.api, "apply", extracted, mode="reconcile", simulate=True)["Simulation"]
            assert plan["ChangesRequired"] is False, f"the extracted forma plans changes: {plan}\n{extracted.read_text()}"
            again = api.run(b.api, "apply", extracted, mode="reconcile")
            assert again is None, f"the extracted forma changed something: {again}\n{extracted.read_text()}"
