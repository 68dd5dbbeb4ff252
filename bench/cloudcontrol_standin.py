"""Cloud Control stand-in benchmark (tests/support/cloudcontrol): how fast the test double itself is, so that a
slow discovery or sweep figure can be told apart from a slow stand-in.

It prints the time to make minimal valid properties for every registry type with create and read handlers
(what the sweep's collection and each sweep case pay), the stand-in process's start time, and through boto3's
``cloudcontrol`` client: ListResources calls per second over every listable type with no resources (what a
discovery of the whole registry asks of it) and full create → poll → read → delete cycles per second. Figures
only; nothing is asserted.

    .venv/bin/python bench/cloudcontrol_standin.py
    .venv/bin/python bench/cloudcontrol_standin.py --cycles 200
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from botocore.exceptions import ClientError  # noqa: E402

from support.cloudcontrol.client import start_cloudcontrol  # noqa: E402
from support.cloudcontrol.examples import example_for  # noqa: E402
from support.cloudcontrol.registry import registry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100, help="create/read/delete cycles to time")
    arguments = parser.parse_args()

    started = time.perf_counter()
    names = registry().in_scope_type_names()
    examples = {name: example_for(registry().schema(name)) for name in names}
    print(f"examples: {len(examples)} types in {time.perf_counter() - started:.1f} s (schemas read included)")

    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        with start_cloudcontrol(Path(directory) / "cloudcontrol.log") as standin:
            print(f"stand-in start: {time.perf_counter() - started:.2f} s")
            client = standin.client()
            listable = [name for name in names if "list" in registry().schema(name).handlers]
            started = time.perf_counter()
            refused = 0
            for name in listable:
                try:
                    client.list_resources(TypeName=name)
                except ClientError:
                    refused += 1  # a child type without its parent's model
            elapsed = time.perf_counter() - started
            print(f"ListResources: {len(listable)} types ({refused} children refused without a parent) in "
                  f"{elapsed:.1f} s, {len(listable) / elapsed:.0f} calls/s")

            standin.set_timing(polls=0)
            sample = names[:: max(1, len(names) // arguments.cycles)][: arguments.cycles]
            started = time.perf_counter()
            calls = 0
            for name in sample:
                event = client.create_resource(TypeName=name, DesiredState=json.dumps(examples[name].properties))
                event = client.get_resource_request_status(RequestToken=event["ProgressEvent"]["RequestToken"])
                identifier = event["ProgressEvent"]["Identifier"]
                client.get_resource(TypeName=name, Identifier=identifier)
                calls += 3
                if "delete" in registry().schema(name).handlers:
                    client.delete_resource(TypeName=name, Identifier=identifier)
                    calls += 1
            elapsed = time.perf_counter() - started
            print(f"cycles: {len(sample)} create/poll/read/delete in {elapsed:.1f} s, "
                  f"{len(sample) / elapsed:.0f} cycles/s ({calls / elapsed:.0f} calls/s)")


if __name__ == "__main__":
    main()
