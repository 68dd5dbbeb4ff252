"""A small command on an agent that already manages many other resources.

Terraform plans one workspace's state, whatever other workspaces hold; svc's agent manages every stack in one
inventory. This prints what a 10-resource forma in a stack of its own costs through the real CLI and agent (the FAKE
plugin at zero latency): the apply, the no-op plan (``--simulate``) and the destroy, each the median of ``--runs``
fresh formas, first on an agent that holds nothing else, then beside each of ``--beside`` other resources (chains of
10 in one other stack, applied once), then beside each of ``--stacks`` other stacks (one resource each, a target for
every ten), the small formas without and then with a standalone policy their stack uses. A figure that grows with
the others is a cost every small command pays in a large estate; then beside each of ``--auto-reconciled`` stacks
holding an auto-reconcile policy, and of ``--history`` past commands (SQLite only). Figures only; nothing is
asserted.

    .venv/bin/python bench/big_inventory.py                        # beside 20,000 resources, then 2,000 stacks
    .venv/bin/python bench/big_inventory.py --beside 20000 100000  # ~2 minutes more
    .venv/bin/python bench/big_inventory.py --beside --stacks --history 20000
    .venv/bin/python bench/big_inventory.py --postgres postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from engine_cli import Cli, write_forma
from fake_agent import drop_postgres_schema, postgres_datastore, start_fake_agent

from support.datastores import sqlite_config
from svc.datastore import open_datastore
from svc.ids import new_id

SIZE = 10
STACKS = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@fake/fake.pkl"
import "@fake/test/item.pkl"

forma {{
  for (t in IntSeq(0, {targets} - 1)) {{
    new svc.Target {{ label = "{name}-\\(t)"; config = new fake.Config {{ path = "{cloud}-\\(t)" }} }}
  }}
  for (s in IntSeq(0, {stacks} - 1)) {{
    new svc.Stack {{ label = "{name}-\\(s)"{policies} }}
    new item.Item {{ label = "m-\\(s)"; stack = "{name}-\\(s)"; target = "{name}-\\(s % {targets})"; value = "x" }}
  }}
}}
"""


def small_commands(cli: Cli, directory: Path, tag: str, runs: int, *, policy: bool = False) -> dict[str, float]:
    """The median seconds of each phase over ``runs`` fresh 10-resource formas, each in a stack of its own;
    ``policy``: each also declaring a standalone policy its stack uses."""
    seconds: dict[str, list[float]] = {"apply": [], "no-op plan": [], "destroy": []}
    for run in range(runs):
        name = f"small-{tag}-{run}"
        forma = write_forma(directory, name, directory / f"cloud-small-{tag}-{run}.db", SIZE, SIZE)
        if policy:
            uses = f'policies {{ new svc.PolicyResolvable {{ label = "{name}" }} }}'
            forma.write_text(forma.read_text().replace(f'new svc.Stack {{ label = "{name}" }}', (
                f'new svc.AutoReconcilePolicy {{ label = "{name}"; interval = 24.h }}\n  '
                f'new svc.Stack {{ label = "{name}"; {uses} }}')))
        seconds["apply"].append(cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait").seconds)
        seconds["no-op plan"].append(cli.timed("apply", "--mode", "reconcile", str(forma), "--simulate").seconds)
        seconds["destroy"].append(cli.timed("destroy", str(forma), "--yes", "--wait").seconds)
    return {phase: statistics.median(values) for phase, values in seconds.items()}


def _report(what: str, beside: dict[str, float], alone: dict[str, float]) -> None:
    print(f"{SIZE} resources {what}: " + ", ".join(f"{phase} {value:.3f} s ({value / alone[phase]:.1f}×)"
                                                  for phase, value in beside.items()), flush=True)


def beside_resources(cli: Cli, directory: Path, sizes: list[int], runs: int, alone: dict[str, float]) -> None:
    held = 0
    for others in sorted(sizes):
        if others > held:
            forma = write_forma(directory, f"others-{others}", directory / f"cloud-others-{others}.db",
                                others - held, 10)
            took = cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait").seconds
            print(f"        ({others - held} others applied in {took:.1f} s)", flush=True)
            held = others
        _report(f"beside {others:,} others", small_commands(cli, directory, f"beside-{others}", runs), alone)


def beside_stacks(cli: Cli, directory: Path, counts: list[int], runs: int, alone: dict[str, float], *,
                  auto_reconciled: bool = False) -> None:
    """``auto_reconciled``: each of the other stacks holds an auto-reconcile policy (daily)."""
    kind = "auto-reconciled " if auto_reconciled else ""
    for stacks in sorted(counts):
        targets = max(stacks // 10, 1)
        name = f"{'auto' if auto_reconciled else 'stacks'}-{stacks}"
        forma = directory / f"{name}.pkl"  # a forma of its own each: they add up
        forma.write_text(STACKS.format(name=name, stacks=stacks, targets=targets, cloud=directory / f"cloud-{name}",
                                       policies="; policies { new svc.AutoReconcilePolicy { interval = 24.h } }"
                                       if auto_reconciled else ""))
        took = cli.timed("apply", "--mode", "reconcile", str(forma), "--yes", "--wait").seconds
        print(f"        ({stacks} other {kind}stacks applied in {took:.1f} s)", flush=True)
        for policy in (False, True) if not auto_reconciled else (False,):
            _report(f"{'with a standalone policy ' if policy else ''}beside {stacks:,} other {kind}stacks and their "
                    f"{targets:,} targets", small_commands(cli, directory, f"{name}-{policy}", runs, policy=policy),
                    alone)


def beside_history(cli: Cli, directory: Path, counts: list[int], runs: int, alone: dict[str, float]) -> None:
    """Past commands, each a copy of the latest apply (its updates with new ksuids), written into the agent's SQLite
    datastore directly: 20,000 applies through the CLI would take ten minutes."""
    store = open_datastore(sqlite_config(directory / "svc.db"))
    try:
        template = next(c for c in store.list_commands(limit=100).items if c.command == "apply")
        updates = store.get_resource_updates(template.id, limit=1_000).items
        held = 0
        for commands in sorted(counts):
            start = template.start_ts - timedelta(days=30)
            for n in range(held, commands):
                command_id = new_id()
                moment = start + timedelta(seconds=n)
                store.put_command(replace(template, id=command_id, start_ts=moment, end_ts=moment),
                                  [replace(u, command_id=command_id, ksuid=new_id()) for u in updates])
            held = commands
            _report(f"beside {commands:,} past commands", small_commands(cli, directory, f"history-{commands}", runs),
                    alone)
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beside", type=int, nargs="*", default=[20_000],
                        help="inventory sizes (other resources the agent manages) to measure at, growing")
    parser.add_argument("--stacks", type=int, nargs="*", default=[2_000],
                        help="then numbers of other stacks (one resource each) to measure beside, growing")
    parser.add_argument("--auto-reconciled", type=int, nargs="*", default=[],
                        help="then numbers of other stacks each holding an auto-reconcile policy, growing")
    parser.add_argument("--history", type=int, nargs="*", default=[],
                        help="then numbers of past commands to measure beside, growing (SQLite only)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--postgres", metavar="URL",
                        help="the agent on this PostgreSQL (postgresql://user@host:port/database), in a schema of its "
                             "own, dropped at the end (default: SQLite in a temp dir)")
    args = parser.parse_args()
    if args.postgres and args.history:
        parser.error("--history writes into the agent's SQLite datastore: not with --postgres")
    schema = f"svc_bench_inventory_{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="svc-bench-inventory-") as tmp:
        directory = Path(tmp)
        agent = start_fake_agent(directory, datastore=postgres_datastore(args.postgres, schema) if args.postgres
                                 else None)
        cli = Cli(agent, directory / "data")
        try:
            alone = small_commands(cli, directory, "alone", args.runs)
            print(f"on {'PostgreSQL' if args.postgres else 'SQLite'}; {SIZE} resources, nothing else managed: "
                  + ", ".join(f"{phase} {value:.3f} s" for phase, value in alone.items()), flush=True)
            beside_resources(cli, directory, args.beside, args.runs, alone)
            beside_stacks(cli, directory, args.stacks, args.runs, alone)
            beside_stacks(cli, directory, args.auto_reconciled, args.runs, alone, auto_reconciled=True)
            if args.history:
                beside_history(cli, directory, args.history, args.runs, alone)
        finally:
            cli.close()
            agent.stop()
            if args.postgres:
                drop_postgres_schema(args.postgres, schema)


if __name__ == "__main__":
    main()
