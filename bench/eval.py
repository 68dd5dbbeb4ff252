"""Forma evaluation: ``svc eval`` of 1,000 and 10,000 explicit resources, beside what Pkl alone takes.

Prints, per size, for a forma of LOCAL files and directories (one directory per ten files, each file's content a
reference to its directory's path) written out one by one ("explicit", as issue 30's goals count them), then for
the same resources made by a ``for`` generator ("generated": the shape this bench had before, Pkl's parse of the
forma is then negligible; the two render the same forma JSON):

- ``svc eval --output-consumer machine`` end to end, as a user runs it with ``SVC_CLI_SERVER=off`` (in its own
  process: its CPU is all in the process timed; the CLI server would take ~0.2 s off each, both sides): wall
  seconds (median and best of ``--runs``), the CPU seconds of the CLI and its pkl server, and the peak RSS of the
  largest of them (the pkl server), each beside its goal (issue 30: ≤ 0.5 s at 1,000, ≤ 3 s at 10,000, pkl
  server ≤ 300 MiB);
- inside one evaluation as the CLI does it (this process, a new pkl server): the time in the pkl server and in
  Python (parsing, validating), the pkl server's CPU and peak RSS, and how many evaluations it took (goal: 1);
- two floors: the same forma through ``pkl eval`` with the same modules and no svc process (svc's modules and
  the LOCAL package copied with their ``@svc/`` imports made relative), and the same objects as plain Pkl
  (``pkl eval -f json``, no svc module at all: written out, or made by ``IntSeq.map``).

Then ``svc eval`` of a forma of 40 AWS registry types from 40 services against one of 3 of them (one resource
each, the types ``bench/aws_registry.py`` chooses): the goal is ≤ 1.2×. The descriptors svc keeps from one
evaluation to the next (``svc.forma.descriptor_cache``) are kept in a new directory for the run
(``$SVC_SCHEMA_CACHE``): the first evaluation of each AWS forma, which derives them, is printed on its own. The
same two formas are then evaluated as a user editing them gets it: through the CLI server, the forma edited (a
comment added) before each ``svc eval``, the evaluation cache on, so that Pkl evaluates it in an evaluator kept
from the evaluation before (``svc.pkl.kept_evaluators``); wall seconds only (the CPU is the server's worker's).
One resource of each type makes the larger forma 37 resources larger as well, so the same again with 40 resources
in each forma (the 3-type one takes its types in turn): the two then differ only in what they import.

Last, ``svc eval`` of 3,000 AWS resources that refer to one another: 1,000 Lambda functions, each referred to by
a permission and an SNS subscription (its ARN through ``res``): what a resource's ``res`` costs a forma
(``svc.resolvableOfProperty``: the AWS classes build only the member read).

``--compare OTHER_CHECKOUT`` runs every ``svc eval`` alternately with this checkout's and OTHER_CHECKOUT's
(``OTHER_CHECKOUT/.venv/bin/svc``): a paired A/B on a machine whose load varies. The machine's load average is
printed with the figures. Figures only, no assertions.

    .venv/bin/python bench/eval.py [--runs N] [--compare OTHER_CHECKOUT] [--aws-only] [SIZE ...]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_agent import stop_cli_server  # noqa: E402

from svc.cli.forma_commands import evaluate_with_flags  # noqa: E402
from svc.pkl import find_pkl, shared_server, stop_shared_server  # noqa: E402
from svc.pkl.packages import svc_package  # noqa: E402
from svc.plugins import installed_plugins  # noqa: E402

GOAL_SECONDS = {1_000: 0.5, 10_000: 3.0}
GOAL_PKL_MIB = 300
GOAL_AWS_RATIO = 1.2
AWS_TYPES = (3, 40)


# -- the formas --------------------------------------------------------------------------------------------------

def _local_resources(size: int) -> list[tuple[str, str, str]]:
    """(kind, label, body) of ``size`` resources: a directory, then nine files referring to its path."""
    resources = []
    for n in range(size):
        directory = n - n % 10
        if n % 10 == 0:
            resources.append(("Directory", f"d{n}", f'path = "d{n}"; mode = "0755"'))
        else:
            resources.append(("File", f"f{n}", f'path = "d{directory}/f{n}.txt"; content = d{directory}.res.path'))
    return resources


_HEADER = ['amends "@svc/forma.pkl"', 'import "@svc/svc.pkl"', 'import "@local/local.pkl" as lcl',
           'import "@local/fs.pkl"']
_PLACES = ['  new svc.Stack { label = "bench" }',
           '  new svc.Target { label = "home"; config = new lcl.Config { root = "/tmp/svc-bench-eval" } }']


def write_explicit(directory: Path, size: int) -> Path:
    """``size`` LOCAL resources, each written out as a user would."""
    lines = [*_HEADER]
    lines += [f'local {label} = new fs.Directory {{ label = "{label}"; {body} }}'
              for kind, label, body in _local_resources(size) if kind == "Directory"]
    lines += ["forma {", *_PLACES]
    lines += [f"  {label}" if kind == "Directory" else f'  new fs.File {{ label = "{label}"; {body} }}'
              for kind, label, body in _local_resources(size)]
    path = directory / f"explicit-{size}.pkl"
    path.write_text("\n".join([*lines, "}", ""]))
    return path


def write_generated(directory: Path, size: int) -> Path:
    """The same ``size`` resources made by a ``for`` generator."""
    lines = [*_HEADER,
             f"local dirs = IntSeq(0, {size // 10 - 1}).toList().map((n) -> "
             'new fs.Directory { label = "d\\(n * 10)"; path = "d\\(n * 10)"; mode = "0755" })',
             "forma {", *_PLACES,
             "  for (n, d in dirs) {",
             "    d",
             "    for (f in IntSeq(1, 9)) {",
             '      new fs.File { label = "f\\(n * 10 + f)"; path = "d\\(n * 10)/f\\(n * 10 + f).txt"',
             "        content = d.res.path }",
             "    }",
             "  }",
             "}", ""]
    path = directory / f"generated-{size}.pkl"
    path.write_text("\n".join(lines))
    return path


_PLAIN_REFERENCE = ('Content {{ ["$res"] = true; ["$label"] = "{label}"; ["$type"] = "LOCAL::FS::Directory"; '
                    '["$property"] = "Path"; ["$visibility"] = "Clear"; ["$stack"] = "bench" }}')


def write_plain_generated(directory: Path, size: int) -> Path:
    """The objects the forma renders, made by ``IntSeq.map`` in plain Pkl: the floor of Pkl alone."""
    common = 'Stack = "bench"; Target = "home"; Managed = true'
    content = _PLAIN_REFERENCE.format(label="d\\(n - n % 10)")
    text = (f"resources = IntSeq(0, {size - 1}).map((n) ->\n"
            f'  if (n % 10 == 0) new Dynamic {{ Label = "d\\(n)"; Type = "LOCAL::FS::Directory"; {common}\n'
            '    Properties { Path = "d\\(n)"; Mode = "0755" } }\n'
            f'  else new Dynamic {{ Label = "f\\(n)"; Type = "LOCAL::FS::File"; {common}\n'
            f'    Properties {{ Path = "d\\(n - n % 10)/f\\(n).txt"; {content} }} }}).toList()\n')
    path = directory / f"plain-generated-{size}.pkl"
    path.write_text(text)
    return path


def write_plain_explicit(directory: Path, size: int) -> Path:
    """The objects the forma renders, with the same members, written out as plain Pkl: the floor of Pkl alone."""
    lines = ["resources {"]
    for kind, label, body in _local_resources(size):
        props = body.replace("path =", "Path =").replace("mode =", "Mode =")
        props = re.sub(r"content = (d\d+)\.res\.path", lambda m: _PLAIN_REFERENCE.format(label=m.group(1)), props)
        lines.append(f'  new {{ Label = "{label}"; Type = "LOCAL::FS::{kind}"; Stack = "bench"; Target = "home"; '
                     f"Managed = true; Properties {{ {props} }} }}")
    path = directory / f"plain-explicit-{size}.pkl"
    path.write_text("\n".join([*lines, "}", ""]))
    return path


def direct_copy(directory: Path, forma: Path) -> Path:
    """The forma and the modules it imports (svc's, the LOCAL package's) copied with their ``@svc/`` and ``@local/``
    imports made relative: what ``pkl eval`` alone can evaluate, the same Pkl with no svc process around it."""
    root = directory / "direct"
    local = next(p for p in installed_plugins() if p.namespace == "LOCAL")
    for name, source in (("svc", svc_package().directory), ("local", local.schema_dir)):
        for module in source.rglob("*.pkl"):
            target = root / name / module.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_relative_imports(module.read_text(), len(target.relative_to(root).parts) - 1))
    copy = root / forma.name
    copy.write_text(_relative_imports(forma.read_text(), 0))
    return copy


def _relative_imports(text: str, depth: int) -> str:
    """``text`` with ``@svc/`` and ``@local/`` imports made relative, from ``depth`` directories below the copy."""
    up = "../" * depth
    return text.replace('"@svc/', f'"{up}svc/').replace('"@local/', f'"{up}local/')


# -- measuring ---------------------------------------------------------------------------------------------------

@dataclass
class Run:
    wall: float
    cpu: float  # of the process and every child it waited for
    peak_mib: float  # of the largest of them


def run_command(command: list[str], env: dict[str, str] | None = None) -> Run:
    """One command to its exit, with the resources of it and its children (``wait4``)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {process.stderr.read().decode() if process.stderr else ''}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def svc_of(checkout: Path | None) -> str:
    return str(Path(sys.executable).parent / "svc") if checkout is None else str(checkout / ".venv" / "bin" / "svc")


def svc_eval(svc: str, forma: Path) -> list[str]:
    return [svc, "eval", str(forma), "--output-consumer", "machine"]


def paired(commands: dict[str, list[str]], runs: int) -> dict[str, list[Run]]:
    """Each command ``runs`` times, in turn, so that a change of the machine's load falls on all of them."""
    results: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            results[name].append(run_command(command))
    return results


def said(runs: list[Run]) -> str:
    walls = [r.wall for r in runs]
    return (f"{statistics.median(walls):.2f} s (best {min(walls):.2f}), CPU {cpu(runs):.2f} s, "
            f"peak {max(r.peak_mib for r in runs):.0f} MiB")


def wall(runs: list[Run]) -> float:
    return statistics.median(r.wall for r in runs)


def cpu(runs: list[Run]) -> float:
    return statistics.median(r.cpu for r in runs)


def ratios(a: list[Run], b: list[Run]) -> str:
    """Wall and CPU of ``a`` over ``b`` (medians): on a loaded machine the CPU ratio is the steadier one."""
    return f"{wall(a) / wall(b):.2f} (wall), {cpu(a) / cpu(b):.2f} (CPU)"


def _proc(pid: int) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmHWM:"))
    return cpu, int(hwm.split()[1]) / 1024


def inside(forma: Path) -> str:
    """One evaluation as ``svc eval`` does it, in this process on a new pkl server: where the time goes."""
    stop_shared_server()
    server = shared_server()
    server._ensure_started()  # the server's start is the same for every forma: not part of these figures
    assert server.pid is not None
    cpu_before, _ = _proc(server.pid)
    in_pkl: list[float] = []
    converse: Callable = server.converse

    def timed(request, conversation):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return converse(request, conversation)
        finally:
            in_pkl.append(time.perf_counter() - started)

    server.converse = timed  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        evaluate_with_flags(forma, [], command="eval", mode="reconcile")
        total = time.perf_counter() - started
        cpu, peak = _proc(server.pid)
    finally:
        del server.converse
        stop_shared_server()
    return (f"{total:.2f} s: pkl server {sum(in_pkl):.2f} s (CPU {cpu - cpu_before:.2f} s, peak {peak:.0f} MiB), "
            f"Python {total - sum(in_pkl):.2f} s; {len(in_pkl)} evaluation(s) (goal 1)")


# -- AWS: 3 types against 40 -------------------------------------------------------------------------------------

def aws_formas(directory: Path, resources: int | None = None) -> dict[int, Path]:
    """A forma per count in ``AWS_TYPES`` importing that many of the types ``bench/aws_registry.py`` chooses (one
    type with nothing required from each service, in the registry's order): one resource of each type, or
    ``resources`` resources taking the types in turn, so that the formas differ only in what they import."""
    from svc_plugin_aws_gen import naming
    from svc_plugin_aws_gen.handwritten import HAND_WRITTEN
    from svc_plugin_aws_gen.registry import load_registry

    chosen: dict[str, str] = {}
    for schema in load_registry():
        settable = set(schema.properties) - {p[0] for p in schema.paths("readOnlyProperties")}
        if (schema.in_scope and schema.name not in HAND_WRITTEN and schema.service not in chosen
                and not schema.raw.get("required") and settable):
            chosen[schema.service] = schema.name
        if len(chosen) == max(AWS_TYPES):
            break
    formas = {}
    for count in AWS_TYPES:
        types = list(chosen.values())[:count]
        classes = [f"m{n}.{naming.class_name(t.split('::')[2])}" for n, t in enumerate(types)]
        path = directory / f"aws-{count}-types-{resources or count}-resources.pkl"
        path.write_text("\n".join([
            'amends "@svc/forma.pkl"', 'import "@svc/svc.pkl"', 'import "@aws/aws.pkl"',
            *(f'import "@aws/{naming.module_path(t)}" as m{n}' for n, t in enumerate(types)),
            "forma {", '  new svc.Stack { label = "bench" }',
            '  new svc.Target { label = "aws"; config = new aws.Config { region = "eu-west-1" } }',
            *(f'  new {classes[n % count]} {{ label = "r{n}" }}' for n in range(resources or count)),
            "}", ""]))
        formas[count] = path
    return formas


def compare_aws(checkouts: dict[str, str], formas: dict[int, Path], runs: int, directory: Path) -> None:
    """The AWS formas' ``svc eval`` in its own process (their first evaluation apart), then edited through the
    CLI server, each side by side with its ratio."""
    few, many = AWS_TYPES
    for name, svc in checkouts.items():
        first = {count: run_command(svc_eval(svc, path)) for count, path in formas.items()}
        print(f"  {name}, the first evaluation (descriptors derived): {few} types {said([first[few]])}; "
              f"{many} types {said([first[many]])}")
        results = paired({count: svc_eval(svc, path) for count, path in formas.items()}, runs)
        print(f"  {name}: {few} types {said(results[few])}; {many} types {said(results[many])}; "
              f"{many} ÷ {few}: {ratios(results[many], results[few])}   goal ≤ {GOAL_AWS_RATIO}")
        edited = edited_through_the_server(svc, formas, runs, directory)
        print(f"  {name}, edited, through the CLI server: {few} types {wall(edited[few]):.3f} s; {many} types "
              f"{wall(edited[many]):.3f} s; {many} ÷ {few}: {wall(edited[many]) / wall(edited[few]):.2f} (wall)"
              f"   goal ≤ {GOAL_AWS_RATIO}")


LAMBDA_REFERENCES = """\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@aws/aws.pkl"
import "@aws/lambda/function.pkl" as fn
import "@aws/lambda/permission.pkl" as perm
import "@aws/sns/subscription.pkl" as sub

local functions = new Listing<fn.Function> {
  for (i in IntSeq(0, %d - 1)) {
    new { label = "f\\(i)"; role = "arn:aws:iam::123456789012:role/r"; runtime = "nodejs20.x"; code { zipFile = "x" } }
  }
}

forma {
  new svc.Stack { label = "s" }
  new svc.Target { label = "aws"; config = new aws.Config { region = "eu-west-1" } }
  for (f in functions) {
    f
    new perm.Permission { label = f.label; action = "lambda:InvokeFunction"; principal = "sns.amazonaws.com"
      functionName = f.res.arn }
    new sub.Subscription { label = f.label; protocol = "lambda"; endpoint = f.res.arn
      topicArn = "arn:aws:sns:eu-west-1:123456789012:t" }
  }
}
"""


def write_aws_references(directory: Path, functions: int = 1_000) -> Path:
    path = directory / "aws-references.pkl"
    path.write_text(LAMBDA_REFERENCES % functions)
    return path


def edited_through_the_server(svc: str, formas: dict[int, Path], runs: int, directory: Path) -> dict[int, list[Run]]:
    """``svc eval`` of each forma, edited before each run, through a CLI server of its own (started and warmed
    first), the evaluation cache on."""
    runtime = Path(tempfile.mkdtemp(prefix="run-", dir=directory))
    env = {**os.environ, "SVC_CLI_SERVER": "on", "SVC_EVALUATION_CACHE": "on", "XDG_RUNTIME_DIR": str(runtime),
           "XDG_CACHE_HOME": str(runtime / "cache")}
    texts = {count: path.read_text() for count, path in formas.items()}
    edits = iter(range(1_000_000))

    def evaluated(count: int) -> Run:
        formas[count].write_text(f"{texts[count]}// edit {next(edits)}\n")
        return run_command(svc_eval(svc, formas[count]), env)

    run_command([svc, "--version"], env)  # starts the server
    deadline = time.monotonic() + 60
    while not list((runtime / "svc").glob("cli-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.05)
    results: dict[int, list[Run]] = {count: [] for count in formas}
    try:
        for _ in range(3):
            for count in formas:
                evaluated(count)
        for _ in range(runs):
            for count in formas:
                results[count].append(evaluated(count))
    finally:
        stop_cli_server(runtime)
        for count, text in texts.items():
            formas[count].write_text(text)
    return results


# -- the report --------------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1_000, 10_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", type=Path, help="another checkout (with its .venv) to run alternately")
    parser.add_argument("--aws-only", action="store_true", help="only the 3 against 40 AWS types")
    args = parser.parse_args()
    checkouts = {"this": svc_of(None), **({"other": svc_of(args.compare)} if args.compare else {})}
    pkl = str(find_pkl())
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        os.environ["SVC_SCHEMA_CACHE"] = str(directory / "schema-cache")  # for every svc eval below
        os.environ["SVC_EVALUATION_CACHE"] = "off"  # Pkl's evaluation is what is timed, not a kept one
        # Each svc eval in its own process, as the figures before the CLI server were: its CPU is then all in the
        # process timed, and the 40-type ratio compares evaluations, not what the server saves on both sides.
        os.environ["SVC_CLI_SERVER"] = "off"
        for size in [] if args.aws_only else args.sizes:
            for shape, write, write_plain in (("explicit", write_explicit, write_plain_explicit),
                                              ("generated", write_generated, write_plain_generated)):
                forma = write(directory, size)
                print(f"\n{size:,} LOCAL resources, {shape}:")
                results = paired({name: svc_eval(svc, forma) for name, svc in checkouts.items()}, args.runs)
                goal = GOAL_SECONDS.get(size) if shape == "explicit" else None
                for name, runs in results.items():
                    print(f"  svc eval ({name}): {said(runs)}   goal" + (f" ≤ {goal} s," if goal else "")
                          + f" pkl server ≤ {GOAL_PKL_MIB} MiB")
                if args.compare:
                    print(f"  this ÷ other: {ratios(results['this'], results['other'])}")
                print(f"  inside (this): {inside(forma)}")
                floors = paired({"direct": [pkl, "eval", str(direct_copy(directory, forma))],
                                 "plain": [pkl, "eval", "-f", "json", str(write_plain(directory, size))]}, args.runs)
                print(f"  floor, the forma through pkl eval alone: {said(floors['direct'])}")
                print(f"  floor, the same objects as plain Pkl:    {said(floors['plain'])}")
        few, many = AWS_TYPES
        print(f"\nsvc eval of {few} AWS registry types against {many} (one resource each):")
        compare_aws(checkouts, aws_formas(directory), args.runs, directory)
        print(f"\nthe same with {many} resources in each forma (the {few} types taken in turn): what importing "
              f"{many - few} types more costs, the resources alike:")
        compare_aws(checkouts, aws_formas(directory, many), args.runs, directory)
        references = write_aws_references(directory)
        print("\nsvc eval of 1,000 AWS Lambda functions, each referred to by a permission and a subscription:")
        results = paired({name: svc_eval(svc, references) for name, svc in checkouts.items()}, args.runs)
        for name, runs in results.items():
            print(f"  {name}: {said(runs)}")
        if args.compare:
            print(f"  this ÷ other: {ratios(results['this'], results['other'])}")
    print(f"\nload average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (at the end)")


if __name__ == "__main__":
    main()
