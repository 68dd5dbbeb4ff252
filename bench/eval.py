"""Forma evaluation at scale: a 1,000- and a 10,000-resource forma over the FIXTURE test plugin.

Prints, per size: the evaluation time (properties pass + full evaluation + parsing into the typed
forma, as `svc eval` does it), and the peak memory of this Python process and of the pkl server.

    .venv/bin/python bench/eval.py [SIZE ...]
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "plugin_pkg"))  # installs the FIXTURE plugin

from svc.forma import evaluate_forma, forma_properties  # noqa: E402
from svc.pkl import shared_server  # noqa: E402


def write_forma(directory: Path, size: int) -> Path:
    """``size`` resources: one network per ten subnets, each subnet referring to its network."""
    lines = [
        'amends "@svc/forma.pkl"',
        'import "@svc/svc.pkl"',
        'import "@fixture/fixture.pkl"',
        'import "@fixture/network/vpc.pkl"',
        'import "@fixture/network/subnet.pkl"',
        f"local nets = IntSeq(0, {size // 10 - 1}).toList().map((n) -> new vpc.Vpc {{",
        '  label = "net-\\(n)"; cidrBlock = "10.\\(n % 250).0.0/16"',
        '  tags { new fixture.Tag { key = "Name"; value = "net-\\(n)" } }',
        "})",
        "forma {",
        '  new svc.Stack { label = "bench" }',
        '  new svc.Target { label = "eu"; config = new fixture.Config { region = "eu-west-1" } }',
        "  for (net in nets) {",
        "    net",
        "    for (s in IntSeq(0, 8)) {",
        '      new subnet.Subnet { label = "\\(net.label)-\\(s)"; vpcId = net.res.vpcId',
        '        cidrBlock = "10.0.\\(s).0/24" }',
        "    }",
        "  }",
        "}",
    ]
    path = directory / f"forma-{size}.pkl"
    path.write_text("\n".join(lines) + "\n")
    return path


def peak_rss_mib(pid: int | None) -> float:
    if pid is None:
        return 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        warmup = write_forma(Path(tmp), 10)
        evaluate_forma(warmup)  # starts the pkl server; its start-up is not part of the figures
        print(f"{'resources':>10} {'eval s':>8} {'per 1k s':>9} {'python peak MiB':>16} {'pkl server peak MiB':>20}")
        for size in sizes:
            path = write_forma(Path(tmp), size)
            start = time.perf_counter()
            forma_properties(path)
            forma = evaluate_forma(path)
            elapsed = time.perf_counter() - start
            assert len(forma.resources) == size, len(forma.resources)
            python_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{size:>10} {elapsed:>8.2f} {elapsed / size * 1000:>9.2f} {python_peak:>16.0f} "
                  f"{peak_rss_mib(shared_server().pid):>20.0f}")


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1_000, 10_000])
