"""A long SIGKILL loop during an apply of updates (issue 24 item 13): N FAKE resources created, then all of them
updated while the engine's process is killed K times, each kill once the cloud has acted on a further share
of the updates (``tests/support/crash_loop.py``; the suite runs a small loop of it in
``tests/integration/test_engine_crash.py``). Exits 1 unless the resumed command ends Success with no update
rejected or failed and the inventory equals the cloud.

    .venv/bin/python bench/crash_loop.py                      # 300 resources, 20 kills
    .venv/bin/python bench/crash_loop.py --size 500 --kills 40
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.crash_loop import run_crash_loop  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=300)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds an update takes to answer")
    arguments = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="svc-crash-loop-") as directory:
        loop = run_crash_loop(Path(directory), size=arguments.size, kills=arguments.kills,
                              latency=arguments.latency)
    unsuccessful = {label: f"{state}: {message}" for label, (state, message) in loop.updates.items()
                    if state != "Success"}
    print(f"{arguments.size} updates, {loop.kills} kills in {time.monotonic() - started:.1f} s: command {loop.state}, "
          f"{len(unsuccessful)} updates not Success, inventory {'=' if loop.inventory == loop.cloud else '!='} cloud")
    for label, outcome in sorted(unsuccessful.items())[:20]:
        print(f"  {label}: {outcome}")
    return 0 if loop.state == "Success" and not unsuccessful and loop.inventory == loop.cloud else 1


if __name__ == "__main__":
    sys.exit(main())
