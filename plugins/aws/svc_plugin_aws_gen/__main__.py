"""``python -m svc_plugin_aws_gen generate|check``."""

from __future__ import annotations

import argparse
import sys
import time

from svc_plugin_aws_gen.outputs import REPOSITORY_ROOT, generate
from svc_plugin_aws_gen.registry import RegistryError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m svc_plugin_aws_gen",
                                     description="The AWS plugin's Pkl schema package, from the pinned registry.")
    parser.add_argument("command", choices=("generate", "check"),
                        help="generate: write the files; check: exit 1 if a committed file differs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        generated = generate()
    except RegistryError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    differences = generated.differences()
    if args.command == "check":
        for path in differences:
            print(f"differs: {path.relative_to(REPOSITORY_ROOT)}")
        if differences:
            print("Error: the generated files are out of date: run python -m svc_plugin_aws_gen generate",
                  file=sys.stderr)
        return 1 if differences else 0
    generated.write()
    print(f"{len(generated.files)} files ({len(differences)} changed) in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
