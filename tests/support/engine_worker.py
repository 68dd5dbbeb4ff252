"""An engine in its own process, for crash tests: ``python -m support.engine_worker`` (``tests`` on the path).

It opens the SQLite datastore, starts the engine (which resumes unfinished commands), submits the forma's
apply when no command exists yet, and, with ``--wait``, exits once no command is unfinished. It prints one
line per event so the test can time its SIGKILL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from support.engine import make_engine
from svc.config.model import DatastoreConfig
from svc.datastore import open_datastore
from svc.engine.operations import RetryPolicy
from svc.engine.service import ApplyRequest, Caller
from svc.forma.model import Forma


def _config(path: Path) -> DatastoreConfig:
    return DatastoreConfig.model_validate({
        "datastoreType": "sqlite", "sqlite": {"filePath": str(path)},
        "postgres": {"host": "", "port": 5432, "user": "", "password": "", "database": "", "schema": "",
                     "connectionParams": ""},
        "auroraDataAPI": {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""}})


async def main(args: argparse.Namespace) -> int:
    store = open_datastore(_config(Path(args.db)))
    retry = RetryPolicy(max_retries=5, retry_delay=0.02, status_interval=0.05, call_timeout=10.0)
    engine = make_engine(store, Path(args.key), retry=retry, max_in_flight=args.in_flight)
    await engine.start()
    print("started", flush=True)
    if not store.list_commands(sources=None).items:
        forma = Forma.model_validate(json.loads(Path(args.forma).read_text()))
        response = await engine.apply(ApplyRequest(forma, "reconcile"), Caller("crash-test"))
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--forma", required=True)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--wait", action="store_true")
    sys.exit(asyncio.run(main(parser.parse_args())))
