"""Every registry type through a forma, Pkl evaluation, the planner, a real agent, the AWS plugin's Cloud Control
handler and the stand-in (issue 26, acceptance 1).

Types go in batches, a stack per batch and a resource per type (``support.registry_sweep``), each batch through
the real CLI against one agent: applied (each resource created), read back (``svc inventory`` holds it with its
native id and what was asked, the stand-in has it), planned again (no change), changed in one mutable property
(exactly those resources updated in place, the stand-in holding the new value), changed in one create-only
property (those resources replaced), and destroyed (the stand-in holds none of them). A failure names the type
and the phase; the test fails on any, after the whole sweep, and prints "N types covered, M failures" with the
time of each phase.

By default a deterministic sample of about 200 registry types plus the 20 native ones runs (through Cloud Control
here, as in the other stand-in tests); every type with create and read handlers with
``SVC_AGENT_SWEEP=all .venv/bin/pytest tests/e2e/test_aws_registry_sweep.py -p no:randomly -q``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.aws import aws_agent, isolated_aws_home
from support.cloudcontrol.client import StandIn
from support.cloudcontrol.registry import registry
from support.processes import Agent, free_port, run_svc
from support.registry_sweep import (
    SWEEP_VARIABLE,
    Ledger,
    Stage,
    SweepType,
    catalog_for,
    forma_text,
    sweep_type_names,
    sweep_types,
)
from svc.forma.extract_catalog import Catalog
from svc.forma.pkl_text import camel_identifier

BATCH = 60
_TIMEOUT = 900  # seconds for one CLI call: a batch's apply waits for every resource
_ROUNDS = 4  # tries of a command whose refusal names resources: each without the ones named before


@dataclass
class Sweep:
    agent: Agent
    standin: StandIn
    directory: Path
    ledger: Ledger

    def svc(self, *args: str) -> Any:
        return run_svc(*args, "--config", str(self.agent.config), env={"COLUMNS": "200"}, timeout=_TIMEOUT)

    def machine(self, phase: str, *args: str) -> tuple[int, Any, str]:
        """A CLI command's exit code, its machine output (None when it printed none) and its error output."""
        started = time.monotonic()
        result = self.svc(*args, "--output-consumer", "machine")
        self.ledger.timed(phase, time.monotonic() - started)
        try:
            return result.returncode, json.loads(result.stdout), result.stderr
        except json.JSONDecodeError:
            return result.returncode, None, result.stdout + result.stderr

    def models(self, types: list[SweepType]) -> dict[str, dict[str, dict[str, Any]]]:
        """The stand-in's models of these types: type → identifier → model."""
        resources = self.standin.state()["resources"]
        return {t.type_name: resources.get(t.type_name) or {} for t in types}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, cloudcontrol_server: StandIn) -> Iterator[Sweep]:
    directory = tmp_path_factory.mktemp("aws-registry-sweep")
    # Every type through Cloud Control, and any other AWS call to a closed port: nothing leaves this machine.
    env = {"SVC_AWS_CLOUD_CONTROL_TYPES": "*", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
           **cloudcontrol_server.environment()}
    with isolated_aws_home(directory), aws_agent(directory, env) as agent:
        yield Sweep(agent, cloudcontrol_server, directory, Ledger())


def _holds(asked: Any, found: Any) -> bool:
    """Whether ``found`` holds what was ``asked`` (objects may gain members the service fills in; the agent
    wraps some values in an envelope with ``$value``, and holds secrets hashed)."""
    if isinstance(found, dict) and found.get("$hashed") is True:  # a secret: svc holds its SHA-256 only
        return isinstance(asked, str) and hashlib.sha256(asked.encode()).hexdigest() == found.get("$value")
    if isinstance(found, dict) and "$value" in found and not (isinstance(asked, dict) and "$value" in asked):
        found = found["$value"]
    if isinstance(asked, (dict, list)) and isinstance(found, str):  # a JSON document, held as its text
        try:
            found = json.loads(found)
        except ValueError:
            return False
    if isinstance(asked, dict) and isinstance(found, dict):
        return all(key in found and _holds(value, found[key]) for key, value in asked.items())
    if isinstance(asked, list) and isinstance(found, list):
        return len(asked) == len(found) and all(any(_holds(a, f) for f in found) for a in asked)
    return asked == found


def _names(errors: str, label: str) -> bool:
    """Whether an error names the resource: by its label (the agent's messages) or its local (Pkl's)."""
    return re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])|\b{camel_identifier(label)}\b", errors) is not None


def _updates(output: Any) -> dict[str, list[dict[str, Any]]]:
    """The resource updates, by label, of a finished command (``{"Commands": [the command]}``) or of a plan's
    simulation (``{"ChangesRequired": …, "Command": …}``)."""
    command = output.get("Command") if "ChangesRequired" in output else (output.get("Commands") or [None])[0]
    found: dict[str, list[dict[str, Any]]] = {}
    for update in (command or {}).get("ResourceUpdates") or []:
        found.setdefault(update.get("ResourceLabel") or "", []).append(update)
    return found


def _operation(updates: list[dict[str, Any]]) -> str:
    """What the updates of one resource do: a replace is a delete and a create of one group."""
    operations = sorted(u.get("Operation") for u in updates)
    if operations == ["create", "delete"] and len({u.get("GroupId") for u in updates}) == 1 \
            and updates[0].get("GroupId"):
        return "replace"
    return ", ".join(operations)


class _Batch:
    """One batch of types through the phases; a type that fails a phase leaves the later ones."""

    def __init__(self, sweep: Sweep, number: int, types: list[SweepType], catalog: Catalog) -> None:
        self.sweep, self.catalog = sweep, catalog
        self.stack = f"sweep-{number:03d}"
        self.types = types
        self.by_label = {t.label: t for t in types}
        self.ledger = sweep.ledger

    @property
    def alive(self) -> list[SweepType]:
        return [t for t in self.types if not self.ledger.failed(t.type_name)]

    def forma(self, stage: Stage) -> Path:
        path = self.sweep.directory / f"{self.stack}-{stage}.pkl"
        path.write_text(forma_text(self.alive, stage, self.stack, self.catalog))
        return path

    def fail_all(self, phase: str, message: str) -> None:
        for t in self.alive:
            self.ledger.fail(t.type_name, phase, message)

    def expect(self, phase: str, output: Any, wanted: dict[str, str]) -> None:
        """Each label of ``wanted`` succeeded with that operation in the command ``output`` shows, and nothing else
        changed."""
        updates = _updates(output)
        for t in self.alive:
            found = updates.get(t.label, [])
            operation = wanted.get(t.label)
            if operation is None and found:
                self.ledger.fail(t.type_name, phase, f"unexpected {_operation(found)}: " + "; ".join(
                    json.dumps(u.get("PatchDocument") or u.get("Properties")) for u in found))
            elif operation is not None and not found:
                self.ledger.fail(t.type_name, phase, f"no {operation} planned")
            elif operation is not None and _operation(found) != operation:
                self.ledger.fail(t.type_name, phase, f"{_operation(found)} instead of {operation}: " + "; ".join(
                    f"{u.get('StateMessage') or ''} {json.dumps(u.get('PatchDocument'))}" for u in found))
            elif operation is not None:
                for update in found:
                    if update.get("State") != "Success":
                        self.ledger.fail(t.type_name, phase, f"{update.get('Operation')} {update.get('State')}: "
                                         f"{update.get('ErrorMessage')}; patch "
                                         f"{json.dumps(update.get('PatchDocument'))}")
                        break

    def command(self, phase: str, stage: Stage, *args: str) -> Any:
        """A CLI command on the batch's forma at ``stage``, in machine mode; its output, or None when it printed
        none. A refusal naming resources (a forma that does not evaluate, a plan the agent refuses) fails those
        types and goes again without them; one naming none fails them all."""
        for _ in range(_ROUNDS):
            if not self.alive:
                return None
            code, output, errors = self.sweep.machine(phase, *args[:1], str(self.forma(stage)), *args[1:])
            if output is not None:
                return output
            named = [t for t in self.alive if _names(errors, t.label)]
            for t in named or self.alive:
                self.ledger.fail(t.type_name, phase, f"exit {code}: {errors}")
        return None

    def apply(self, phase: str, stage: Stage, wanted: dict[str, str]) -> None:
        output = self.command(phase, stage, "apply", "--mode", "reconcile", "--yes", "--wait")
        if output is None or (not wanted and output.get("CommandId") is None):
            return
        self.expect(phase, output, {label: operation for label, operation in wanted.items()
                                    if not self.ledger.failed(self.by_label[label].type_name)})

    def run(self) -> None:
        self.apply("create", Stage.CREATED, {t.label: "create" for t in self.alive})
        self.read_back()
        self.replan()
        self.apply("update", Stage.UPDATED, {t.label: "update" for t in self.alive if t.example.mutable})
        self.check_models("update", Stage.UPDATED, [t for t in self.alive if t.example.mutable])
        self.apply("replace", Stage.REPLACED, {t.label: "replace" for t in self.alive if t.example.create_only})
        self.check_models("replace", Stage.REPLACED, [t for t in self.alive if t.example.create_only])
        self.destroy()

    def read_back(self) -> None:
        code, output, errors = self.sweep.machine("read", "inventory", "--query", f"stack:{self.stack}",
                                                  "--max-results", "0")
        if output is None:
            self.fail_all("read", f"exit {code}: {errors}")
            return
        found = {r["Label"]: r for r in output.get("Resources") or []}
        models = self.sweep.models(self.alive)
        for t in self.alive:
            resource = found.get(t.label)
            if resource is None:
                self.ledger.fail(t.type_name, "read", "not in svc inventory")
                continue
            native_id = resource.get("NativeID")
            if native_id not in models[t.type_name]:
                self.ledger.fail(t.type_name, "read", f"native id {native_id!r} is not the stand-in's: "
                                 f"{sorted(models[t.type_name])}")
                continue
            asked = {k: v for k, v in t.properties(Stage.CREATED).items() if k not in registry().schema(
                t.type_name).write_only}
            if not _holds(asked, resource.get("Properties") or {}):
                self.ledger.fail(t.type_name, "read", f"inventory {json.dumps(resource.get('Properties'))} "
                                 f"does not hold {json.dumps(asked)}")

    def replan(self) -> None:
        output = self.command("re-plan", Stage.CREATED, "plan", "--mode", "reconcile")
        if output is not None and output.get("ChangesRequired"):
            self.expect("re-plan", output, {})

    def check_models(self, phase: str, stage: Stage, changed: list[SweepType]) -> None:
        """The stand-in holds each changed type's resource with its new value."""
        models = self.sweep.models(changed)
        for t in changed:
            if self.ledger.failed(t.type_name):
                continue
            change = t.example.mutable if stage is Stage.UPDATED else t.example.create_only
            assert change is not None
            found = list(models[t.type_name].values())
            if len(found) != 1 or not _holds(change.after, found[0].get(change.name)):
                self.ledger.fail(t.type_name, phase, f"the stand-in holds {json.dumps(found)}, not "
                                 f"{change.name} = {json.dumps(change.after)}")

    def destroy(self) -> None:
        output = self.command("destroy", Stage.REPLACED, "destroy", "--yes", "--wait")
        if output is None:
            return
        self.expect("destroy", output, {t.label: "delete" for t in self.alive})
        for type_name, found in self.sweep.models(self.alive).items():
            if found and not self.ledger.failed(type_name):
                self.ledger.fail(type_name, "destroy", f"still on the stand-in: {sorted(found)}")


# The suite's sample takes two to three minutes; the full sweep, every type, about twenty.
@pytest.mark.timeout(3 * 3600 if os.environ.get(SWEEP_VARIABLE) == "all" else 900)
def test_every_registry_type_lives_its_whole_life_through_a_forma_and_the_agent(
        sweep: Sweep, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    names = sweep_type_names()
    catalog = catalog_for(names)
    types = sweep_types(names, catalog, sweep.ledger)
    sweep.ledger.timed("examples and catalog", time.monotonic() - started)
    batches = [types[first:first + BATCH] for first in range(0, len(types), BATCH)]
    for number, batch in enumerate(batches):
        batch_started = time.monotonic()
        _Batch(sweep, number, batch, catalog).run()
        with capsys.disabled():  # a full sweep takes a while: a line per batch shows it going
            failed = {f.type_name for f in sweep.ledger.failures} & {t.type_name for t in batch}
            print(f"\nbatch {number + 1}/{len(batches)}: {len(batch)} types, {len(failed)} failed, "
                  f"{time.monotonic() - batch_started:.0f} s", end="")
    failures = sweep.ledger.failures
    passed = [t for t in types if not sweep.ledger.failed(t.type_name)]
    figure = (f"{len(names)} types covered ({sum(1 for t in passed if t.example.mutable)} updated in place, "
              f"{sum(1 for t in passed if t.example.create_only)} replaced), "
              f"{len({f.type_name for f in failures})} failures")
    timings = ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in sweep.ledger.seconds.items())
    with capsys.disabled():
        print(f"\nregistry sweep through the agent: {figure} in {time.monotonic() - started:.0f} s ({timings})")
    assert not failures, figure + ":\n" + "\n".join(map(str, failures))
