"""``python -m svc_plugin_fake --db FILE …``: read and change a FAKE cloud out of band."""

from __future__ import annotations

import argparse
import json
import sys

from svc_plugin_fake.cloud import KNOBS, FakeCloud


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m svc_plugin_fake", description=__doc__)
    parser.add_argument("--db", required=True, help="the cloud's SQLite file (the target config's path)")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="print every resource as JSON")
    listing.add_argument("--type")
    get = commands.add_parser("get", help="print one resource")
    get.add_argument("native_id")
    set_ = commands.add_parser("set", help="set a property (JSON value) out of band")
    set_.add_argument("native_id")
    set_.add_argument("key")
    set_.add_argument("value", help="a JSON value; 'null' removes the property")
    delete = commands.add_parser("delete", help="delete a resource out of band")
    delete.add_argument("native_id")
    knob = commands.add_parser("knob", help=f"set a knob ({', '.join(KNOBS)}) to a JSON object")
    knob.add_argument("name", choices=KNOBS)
    knob.add_argument("value")
    clear = commands.add_parser("clear-knobs", help="clear the named knobs (all when none named)")
    clear.add_argument("names", nargs="*")
    calls = commands.add_parser("calls", help="print the calls the plugin received")
    calls.add_argument("--op")
    args = parser.parse_args(argv)
    cloud = FakeCloud(args.db)
    if args.command == "list":
        print(json.dumps(cloud.resources(args.type), indent=2, sort_keys=True))
    elif args.command == "get":
        found = cloud.get(args.native_id)
        if found is None:
            print(f"Error: no resource {args.native_id}", file=sys.stderr)
            return 1
        print(json.dumps(found, indent=2, sort_keys=True))
    elif args.command == "set":
        try:
            cloud.set_property(args.native_id, args.key, json.loads(args.value))
        except KeyError:
            print(f"Error: no resource {args.native_id}", file=sys.stderr)
            return 1
    elif args.command == "delete":
        if not cloud.remove(args.native_id):
            print(f"Error: no resource {args.native_id}", file=sys.stderr)
            return 1
    elif args.command == "knob":
        cloud.set_knob(args.name, json.loads(args.value))
    elif args.command == "clear-knobs":
        cloud.clear_knobs(*args.names)
    elif args.command == "calls":
        print(json.dumps(cloud.calls(args.op), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
