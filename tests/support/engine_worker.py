"""An engine in its own process, for crash tests: ``python -m support.engine_worker`` (``tests`` on the path).

Two modes:

* run (``--db --key --forma``): opens the SQLite datastore, starts the engine (which resumes unfinished
  commands), submits the forma's apply when no command exists yet, and, with ``--wait``, exits once no
  command is unfinished. It prints one line per event so the test can time its SIGKILL.
* ``--serve``: imports everything, then waits for one JSON line naming the datastore and key (so a test
  can start a spare worker ahead of time and not pay the imports when it needs one), starts the engine,
  prints ``started`` and answers JSON requests line by line (``engine_process.EngineProcess``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from support.datastores import sqlite_config
from support.engine import make_engine, shown
from svc.datastore import open_datastore
from svc.datastore.interface import Datastore
from svc.engine.engine import Engine
from svc.engine.errors import EngineError
from svc.engine.operations import RetryPolicy
from svc.engine.service import ApplyRequest, Caller, DestroyRequest
from svc.model.forma import Forma

CALLER = Caller("crash-test")


def _retry() -> RetryPolicy:
    return RetryPolicy(max_retries=5, retry_delay=0.02, status_interval=0.05, call_timeout=10.0)


async def main(args: argparse.Namespace) -> int:
    store = open_datastore(sqlite_config(Path(args.db)))
    engine = make_engine(store, Path(args.key), retry=_retry(), max_in_flight=args.in_flight)
    await engine.start()
    print("started", flush=True)
    if not store.list_commands(sources=None).items:
        forma = Forma.model_validate(json.loads(Path(args.forma).read_text()))
        response = await shown(engine).apply(ApplyRequest(forma, "reconcile"), CALLER)
        print("submitted", response.CommandId, flush=True)
    if args.wait:
        while store.list_incomplete_commands().items:
            await asyncio.sleep(0.05)
        print("done", flush=True)
    else:
        await asyncio.sleep(3600)
    await engine.stop()
    store.close()
    return 0


# -- serve mode -----------------------------------------------------------------------------------------------

async def _settle(engine: Engine, store: Datastore) -> None:
    """Until no command is unfinished and no force-canceled change is still running."""
    while await asyncio.to_thread(lambda: store.list_incomplete_commands().items) or engine.runs.detached:
        await asyncio.sleep(0.02)


async def _answer(engine: Engine, store: Datastore, request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    try:
        if op in ("apply", "destroy"):
            forma = Forma.model_validate(request["forma"])
            if op == "apply":
                response = await shown(engine).apply(ApplyRequest(forma, request["mode"], force=request["force"]), CALLER)
            else:
                response = await shown(engine).destroy(DestroyRequest(forma=forma, on_dependents=request["on_dependents"]),
                                                 CALLER)
            return {"command_id": response.CommandId, "changes": response.Simulation.ChangesRequired}
        if op == "wait":
            view = await shown(engine).wait(request["command_id"], request["timeout"])
            return {"state": view.State if view is not None else None}
        if op == "cancel":
            await shown(engine).cancel(request["query"], CALLER, force=request["force"])
            return {}
        if op == "settle":
            await asyncio.wait_for(_settle(engine, store), request["timeout"])
            return {}
        if op == "synchronize":
            return {"command_id": await engine.synchronize()}
    except EngineError as error:
        return {"refused": type(error).__name__, "message": error.message}
    raise ValueError(f"unknown request {op!r}")


async def serve() -> int:
    loop = asyncio.get_running_loop()
    line = await loop.run_in_executor(None, sys.stdin.readline)
    if not line:
        return 0  # a spare that was never needed
    setup = json.loads(line)
    store = open_datastore(sqlite_config(Path(setup["db"])))
    engine = make_engine(store, Path(setup["key"]), retry=_retry(), max_in_flight=setup.get("in_flight", 8))
    await engine.start()
    print("started", flush=True)
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        answer = await _answer(engine, store, json.loads(line))
        print(json.dumps(answer), flush=True)
    await engine.stop()
    store.close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--db")
    parser.add_argument("--key")
    parser.add_argument("--forma")
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--wait", action="store_true")
    arguments = parser.parse_args()
    if arguments.serve:
        sys.exit(asyncio.run(serve()))
    if not (arguments.db and arguments.key and arguments.forma):
        parser.error("--db, --key and --forma are required without --serve")
    sys.exit(asyncio.run(main(arguments)))
