"""Bytes the engine writes for resource updates: when a command is stored, and per state transition.

An in-process engine (``tests/support/engine.py``: SQLite in a temp dir, the FAKE plugin in process) applies
chains of 10 ``FAKE::Test::Item`` (each referring to the one before, each with an opaque ``Token``), then
destroys them. Every statement the datastore sends is watched (SQLAlchemy's ``before_cursor_execute``) and
the parameters of those that write ``resource_updates`` or ``resource_changes`` are measured as the driver
gets them (JSON already serialized): the text length of each value, summed. A transition is one row of an
UPDATE of ``resource_updates`` (the engine's group commits; a cancel writes none here).

    .venv/bin/python bench/update_bytes.py              # 200 resources
    .venv/bin/python bench/update_bytes.py --size 1000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import sqlalchemy as sa  # noqa: E402

from support.datastores import sqlite_config  # noqa: E402
from support.engine import fake_forma, item, make_engine, running  # noqa: E402
from svc.datastore import open_datastore  # noqa: E402
from svc.engine.service import ApplyRequest, Caller, DestroyRequest  # noqa: E402

DEPTH = 10


def _size(value: Any) -> int:
    return 0 if value is None else len(value) if isinstance(value, (str, bytes)) else len(str(value))


class Meter:
    """Parameters' bytes and rows of the statements that write resource updates, by kind."""

    def __init__(self) -> None:
        self.bytes: Counter[str] = Counter()
        self.rows: Counter[str] = Counter()

    def watch(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        text = " ".join(statement.split()).upper()
        if text.startswith("UPDATE RESOURCE_UPDATES"):
            kind = "transition"
        elif text.startswith("INSERT INTO RESOURCE_UPDATES") or text.startswith("INSERT INTO RESOURCE_CHANGES"):
            kind = "store"
        else:
            return
        rows = parameters if many else [parameters]
        for row in rows:
            values = row.values() if isinstance(row, dict) else row
            self.bytes[kind] += sum(_size(value) for value in values)
            self.rows[kind] += 1 if kind == "transition" or "RESOURCE_UPDATES" in text else 0


async def _scenario(engine: Any, cloud: Path, size: int) -> None:
    resources = [item(f"c{c}-{d}", f"v{d}", ref=f"c{c}-{d - 1}" if d else None, token=f"secret-{c}-{d}")
                 for c in range(size // DEPTH) for d in range(DEPTH)]
    forma = fake_forma(cloud, resources)
    caller = Caller("bench")
    for submitted in (engine.apply(ApplyRequest(forma, "reconcile"), caller),
                      engine.destroy(DestroyRequest(forma), caller)):
        stored = await engine.wait((await submitted).command_id, 600)
        assert stored is not None and stored.record.state == "Success", stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200, help="resources (a multiple of 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        store = open_datastore(sqlite_config(directory / "svc.db"))
        meter = Meter()
        sa.event.listen(store.engine, "before_cursor_execute", meter.watch)  # type: ignore[attr-defined]

        async def run() -> None:
            async with running(make_engine(store, directory / "engine.key")) as engine:
                await _scenario(engine, directory / "cloud.db", args.size)

        try:
            asyncio.run(run())
        finally:
            store.close()
    changes = 2 * args.size  # the apply's creates and the destroy's deletes
    print(f"{args.size} resources applied then destroyed: {changes} resource updates")
    stored = meter.bytes["store"]
    print(f"stored with their commands: {stored:,} bytes ({stored / changes:,.0f} per update)")
    transitions = meter.rows["transition"]
    print(f"state transitions: {transitions:,} rows, {meter.bytes['transition']:,} bytes "
          f"({meter.bytes['transition'] / max(transitions, 1):,.0f} per transition)")


if __name__ == "__main__":
    main()
