"""The AWS plugin's full registry package (~1,700 generated types): what it costs to make and to use.

Prints:
- the generator's run time (the registry schemas pinned in cfn-lint → the Pkl modules, in memory);
- an agent's first start with the AWS plugin (schema extraction of every type, no cache) and its cached
  start (the extraction cache written by the first), each from ``svc agent start`` to a healthy answer;
- ``svc eval`` of a forma importing 40 generated types from 40 services, one resource each;
- a discovery of every discoverable registry type (~1,560) on one target with no resources, every type through
  Cloud Control on the stand-in (tests/support/cloudcontrol), from ``POST /admin/discover`` to its answer: at the
  plugin's default rate limit against a stand-in that throttles ListResources past Cloud Control's threshold
  (about 30 a second, as aws-nuke measured it), then with both limits out of the way (what binds next).

Goals (issue 26): first start ≤ 60 s, cached start ≤ 2 s, eval of the 40-type forma ≤ 2 s. Each start and eval
is printed beside its reference, the same without the registry's types (an agent with the FAKE plugin only;
the eval of a one-resource forma), so the package's own cost reads as the difference (and the ratio). The
machine's load average is printed with the figures: on a shared machine wall-clock figures grow with it, so
each is followed by the CPU seconds it took (the process and every child it waited for: plugin processes,
pkl servers), which load does not change much.

    .venv/bin/python bench/aws_registry.py
    .venv/bin/python bench/aws_registry.py --discovery   # the discovery figures alone
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fake_agent import children, process_cpu  # noqa: E402
from svc_plugin_aws_gen import naming  # noqa: E402
from svc_plugin_aws_gen.handwritten import HAND_WRITTEN  # noqa: E402
from svc_plugin_aws_gen.outputs import generate  # noqa: E402
from svc_plugin_aws_gen.registry import load_registry  # noqa: E402

from support.aws import aws_agent, isolated_aws_home  # noqa: E402
from support.cloudcontrol.client import start_cloudcontrol  # noqa: E402
from support.processes import SVC, Agent, free_port, isolated_home, run_svc  # noqa: E402

EVAL_TYPES = 40
UNLIMITED_RATE = 10_000  # calls a second: far above what the stand-in answers, so the limiter never waits
# ListResources calls a second past which Cloud Control throttles: not published by AWS; aws-nuke measured about 30
# (github.com/ekristen/aws-nuke/issues/508) and settled on 25 for its own calls (pull request 510).
CLOUD_CONTROL_LIST_RATE = 30.0
PLATFORM = Path(__file__).resolve().parents[1] / "examples" / "aws" / "platform.pkl"


def agent_config(directory: Path, port: int, namespace: str) -> Path:
    config = directory / f"agent-{namespace}.pkl"
    config.write_text(f"""\
amends "svc:/Config.pkl"
import "plugins:/{namespace}.pkl"
agent {{
  server {{ bindAddress = "127.0.0.1"; port = {port} }}
  datastore {{ sqlite {{ filePath = "{directory / f'{namespace}.db'}" }} }}
  resourcePlugins {{ new {namespace}.PluginConfig {{}} }}
  synchronization {{ enabled = false }}
  discovery {{ enabled = false }}
}}
cli {{ api {{ url = "http://localhost"; port = {port} }} }}
""")
    return config


class Timed:
    """Wall-clock and CPU seconds of what ran in between (CPU: of the children waited for meanwhile)."""

    def __enter__(self) -> Timed:
        self.started, self.cpu_before = time.perf_counter(), _children_cpu()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self.started
        self.cpu = _children_cpu() - self.cpu_before

    def said(self, reference: Timed | None = None) -> str:
        ratio = f", {self.wall / reference.wall:.1f}× the reference" if reference is not None else ""
        return f"{self.wall:.2f} s ({self.cpu:.2f} CPU s{ratio})"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_start(agent: Agent) -> Timed:
    """From ``svc agent start`` to a healthy answer; the CPU also counts the agent's stop, which is short."""
    with Timed() as timed:
        agent.start(wait=False)
        agent.wait_healthy(timeout=600)
        wall = time.perf_counter() - timed.started
        agent.stop()
    timed.wall = wall
    return timed


def forma_of_forty(directory: Path) -> Path:
    """One generated type with nothing required from each of 40 services, one resource each."""
    chosen: dict[str, str] = {}
    for schema in load_registry():
        settable = set(schema.properties) - {p[0] for p in schema.paths("readOnlyProperties")}
        if (schema.in_scope and schema.name not in HAND_WRITTEN and schema.service not in chosen
                and not schema.raw.get("required") and settable):
            chosen[schema.service] = schema.name
        if len(chosen) == EVAL_TYPES:
            break
    imports = [f'import "@aws/{naming.module_path(t)}" as m{n}' for n, t in enumerate(chosen.values())]
    resources = [f'  new m{n}.{naming.class_name(t.split("::")[2])} {{ label = "r{n}" }}'
                 for n, t in enumerate(chosen.values())]
    return write_forma(directory / "forty.pkl", imports, resources)


def forma_of_one(directory: Path) -> Path:
    return write_forma(directory / "one.pkl", ['import "@aws/s3/bucket.pkl"'], ['  new bucket.Bucket { label = "b" }'])


def write_forma(path: Path, imports: list[str], resources: list[str]) -> Path:
    path.write_text("\n".join([
        'amends "@svc/forma.pkl"', 'import "@svc/svc.pkl"', 'import "@aws/aws.pkl"', *imports, "forma {",
        '  new svc.Stack { label = "bench" }',
        '  new svc.Target { label = "aws"; config = new aws.Config { region = "eu-west-1" } }',
        *resources, "}", ""]))
    return path


def timed_eval(forma: Path) -> Timed:
    with Timed() as timed:
        subprocess.run([SVC, "eval", str(forma), "--output-consumer", "machine"], check=True,
                       stdout=subprocess.DEVNULL)
    return timed


def timed_discovery(directory: Path, rate: int | None = None, list_limit: float = 0.0) -> str:
    """One discovery of every discoverable type through Cloud Control on the stand-in, nothing to find; ``rate``
    overrides the plugin's rate limit (calls a second); ``list_limit``: the stand-in throttles ListResources calls
    past that many a second (0: never). With the calls throttled, the CPU seconds each process spent meanwhile and
    the share of the wall time they fill: the limiter binds when none is near 1 and the calls a second match it."""
    directory.mkdir(parents=True, exist_ok=True)
    with start_cloudcontrol(directory / "cloudcontrol.log") as standin, isolated_aws_home(directory):
        standin.throttle(per_second=list_limit, operations=["ListResources"])
        env = {"SVC_AWS_CLOUD_CONTROL_TYPES": "*", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
               **standin.environment()}
        plugin = f"rateLimit {{ maxRequestsPerSecondForNamespace = {rate} }}" if rate is not None else ""
        with aws_agent(directory, env, plugin=plugin) as agent:
            target = directory / "target.pkl"
            target.write_text('amends "@svc/forma.pkl"\nimport "@svc/svc.pkl"\nimport "@aws/aws.pkl"\n'
                              'forma {\n  new svc.Target { label = "aws"; '
                              'config = new aws.Config { region = "us-east-1" } }\n}\n')
            registered = run_svc("apply", "--mode", "patch", str(target), "--yes", "--wait", "--config",
                                 str(agent.config))
            assert registered.returncode == 0, registered.stdout + registered.stderr
            assert agent.process is not None
            processes = {"agent": agent.process.pid, "stand-in": _stand_in_pid(standin.url)}
            processes |= {f"plugin {pid}": pid for pid in children(agent.process.pid)}
            cpu = {name: process_cpu(pid) for name, pid in processes.items()}
            started = time.perf_counter()
            report = httpx.post(f"{agent.url}/api/v1/admin/discover", timeout=3600).json()
            wall = time.perf_counter() - started
            spent = {name: process_cpu(pid) - cpu[name] for name, pid in processes.items()}
            state = standin.state()
            calls, throttled = state["calls"].get("ListResources", 0), state["throttled"].get("ListResources", 0)
    busy = ", ".join(f"{name} {seconds:.1f} s ({seconds / wall:.0%})" for name, seconds in spent.items())
    return (f"{wall:.1f} s, {calls} ListResources calls ({calls / wall:.1f}/s, {throttled} throttled), "
            f"{len(report.get('Errors') or [])} errors; CPU: {busy}")


def _stand_in_pid(url: str) -> int:
    """The stand-in's process, found by its port (``start_cloudcontrol`` keeps its handle to itself)."""
    port = url.rsplit(":", 1)[-1]
    for pid in children(os.getpid()):
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"support.cloudcontrol" in command and port.encode() in command:
            return pid
    return os.getpid()


def discovery(directory: Path) -> None:
    """At the plugin's default rate limit, Cloud Control's throttling imitated (the goal: ≤ 60 s), then with
    both limits out of the way (what binds next: the stand-in, the agent, the plugin)."""
    print(f"discovery of every discoverable type, nothing to find, through Cloud Control, at the plugin's default "
          f"rate limit, ListResources throttled past {CLOUD_CONTROL_LIST_RATE:.0f} a second: "
          f"{timed_discovery(directory / 'discovery-default', list_limit=CLOUD_CONTROL_LIST_RATE)}   (goal ≤ 60 s)",
          flush=True)
    print(f"the same with the rate limit at {UNLIMITED_RATE} calls a second and nothing throttled: "
          f"{timed_discovery(directory / 'discovery-unlimited', UNLIMITED_RATE)}", flush=True)


def main() -> None:
    if sys.argv[1:] == ["--discovery"]:
        with tempfile.TemporaryDirectory() as tmp, isolated_home(Path(tmp)):
            discovery(Path(tmp))
        return
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    started = time.perf_counter()
    files = generate().files
    print(f"generator: {len(files)} files in {time.perf_counter() - started:.1f} s")
    with tempfile.TemporaryDirectory() as tmp, isolated_home(Path(tmp)):
        directory = Path(tmp)
        os.environ["SVC_SCHEMA_CACHE"] = str(directory / "schema-cache")  # empty: the first start extracts
        port = free_port()
        reference = Agent(config=agent_config(directory, port, "FAKE"), port=port, log=directory / "fake.log")
        timed_start(reference)  # its database is made and migrated: the next start is like the cached one below
        start = timed_start(reference)
        print(f"reference: an agent with the FAKE plugin only starts in {start.said()}")
        agent = Agent(config=agent_config(directory, port, "AWS"), port=port, log=directory / "agent.log")
        print(f"agent first start (extraction of every type): {timed_start(agent).said(start)}   (goal ≤ 60 s)")
        print(f"agent cached start: {timed_start(agent).said(start)}   (goal ≤ 2 s)")
        one = timed_eval(forma_of_one(directory))
        print(f"reference: svc eval of a forma of one resource: {one.said()}")
        print(f"svc eval of a forma of {EVAL_TYPES} types from {EVAL_TYPES} services: "
              f"{timed_eval(forma_of_forty(directory)).said(one)}   (goal ≤ 2 s)")
        print(f"svc eval of examples/aws/platform.pkl (42 types wired by references): "
              f"{timed_eval(PLATFORM).said(one)}   (goal ≤ 2 s)")
        discovery(directory)
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (at the end)")


if __name__ == "__main__":
    main()
