"""``python -m svc.plugins.conformance [PLUGIN] [--types TYPE …] [--keep DIR]``: the conformance kit on an
installed plugin (what ``svc plugin test`` runs). Exit code 0: every phase passed; 1: one failed; 2: the kit could
not run (the message says why)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from svc.plugins.conformance.command import run
from svc.plugins.conformance.suite import KitError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m svc.plugins.conformance", description=__doc__.splitlines()[0])
    parser.add_argument("plugin", nargs="?", default=".",
                        help="an installed plugin's namespace, or a plugin distribution's directory (default: .)")
    parser.add_argument("--types", nargs="+", default=[], metavar="TYPE", help="only these resource types")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="run in DIR and keep it (the agent's log and database, the formas)")
    args = parser.parse_args(argv)
    try:
        return run(args.plugin, args.types, args.keep)
    except KitError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
