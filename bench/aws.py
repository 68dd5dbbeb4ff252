"""svc against Ansible on the same AWS work, both against one moto server on a loopback port.

The work: 50 S3 buckets, 50 SQS queues and 10 VPCs with 2 subnets each (130 resources). Each tool runs it
twice: once creating everything, then again with nothing to change. svc is timed from ``svc apply --mode
reconcile --yes --wait`` to its exit, with its agent (SQLite, the AWS plugin) already running, as it is in
use; Ansible is ``ansible-playbook`` of the idiomatic playbook (the ``amazon.aws`` and ``community.aws``
collections, one task per resource kind, a loop over the items). Prints both times and svc ÷ Ansible for
each run; the goal is svc faster on both. Nothing is asserted beyond both tools having done the work.

Ansible is not a dependency of svc: the bench installs the ``ansible`` distribution (which bundles the
collections) with boto3 into its own virtualenv, ``.venv/ansible-bench`` (``--ansible-venv``), on first use.

    .venv/bin/python bench/aws.py
    .venv/bin/python bench/aws.py --buckets 10 --queues 10 --vpcs 2    # quicker
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import boto3  # noqa: E402

from support.aws import AWS_TEST_REGION, agent_config_pkl, aws_environment  # noqa: E402
from support.moto import moto_server, reset  # noqa: E402
from support.processes import Agent, free_port, run_svc  # noqa: E402

SUBNETS_PER_VPC = 2


@dataclass(frozen=True)
class Work:
    buckets: int
    queues: int
    vpcs: int

    @property
    def total(self) -> int:
        return self.buckets + self.queues + self.vpcs * (1 + SUBNETS_PER_VPC)


# -- svc --------------------------------------------------------------------------------------------------------

def svc_forma(work: Work, url: str) -> str:
    return f"""\
amends "@svc/forma.pkl"
import "@svc/svc.pkl"
import "@aws/aws.pkl"
import "@aws/s3/bucket.pkl"
import "@aws/sqs/queue.pkl"
import "@aws/ec2/vpc.pkl"
import "@aws/ec2/subnet.pkl"

local function network(n: Int): vpc.VPC = new vpc.VPC {{ label = "vpc-\\(n)"; cidrBlock = "10.\\(n).0.0/16" }}

forma {{
  new svc.Stack {{ label = "bench" }}
  new svc.Target {{ label = "moto"; config = new aws.Config {{ region = "{AWS_TEST_REGION}"; endpointUrl = "{url}" }} }}
  for (n in IntSeq(0, {work.buckets - 1})) {{
    new bucket.Bucket {{ label = "bucket-\\(n)"; bucketName = "svc-bench-\\(n)" }}
  }}
  for (n in IntSeq(0, {work.queues - 1})) {{
    new queue.Queue {{ label = "queue-\\(n)"; queueName = "svc-bench-\\(n)" }}
  }}
  for (n in IntSeq(0, {work.vpcs - 1})) {{
    network(n)
    for (s in IntSeq(0, {SUBNETS_PER_VPC - 1})) {{
      new subnet.Subnet {{
        label = "subnet-\\(n)-\\(s)"; vpcId = network(n).res.vpcId; cidrBlock = "10.\\(n).\\(s).0/24"
      }}
    }}
  }}
}}
"""


def run_svc_twice(work: Work, url: str, directory: Path) -> tuple[float, float]:
    port = free_port()
    agent = Agent(config=agent_config_pkl(directory / "agent.pkl", port), port=port,
                  log=directory / "agent.log").start()
    try:
        forma = directory / "bench.pkl"
        forma.write_text(svc_forma(work, url))
        times = []
        for expected in ("succeeded", "No changes needed"):
            started = time.perf_counter()
            result = run_svc("apply", "--mode", "reconcile", str(forma), "--yes", "--wait", "--config",
                             str(agent.config), timeout=1800)
            times.append(time.perf_counter() - started)
            if result.returncode != 0 or expected not in result.stdout:
                sys.exit(f"svc apply failed:\n{result.stdout[-3000:]}{result.stderr}")
        return times[0], times[1]
    finally:
        agent.stop()


# -- Ansible ----------------------------------------------------------------------------------------------------

def ansible_venv(path: Path) -> Path:
    """``ansible-playbook`` of a virtualenv with ansible and boto3, made on first use."""
    playbook = path / "bin" / "ansible-playbook"
    if not playbook.exists():
        print(f"installing ansible and boto3 into {path} (first run only)…", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "--quiet", "ansible", "boto3",
                        "botocore"], check=True)
    return playbook


def ansible_playbook(work: Work, url: str) -> str:
    connection = (f"endpoint_url: {url}\n        region: {AWS_TEST_REGION}\n"
                  "        access_key: testing\n        secret_key: testing")
    return f"""\
- hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/amazon.aws.aws:
        {connection}
    group/community.aws.aws:
        {connection}
  tasks:
    - name: buckets
      amazon.aws.s3_bucket:
        name: "ansible-bench-{{{{ item }}}}"
        state: present
      loop: "{{{{ range(0, {work.buckets}) | list }}}}"
    - name: queues
      community.aws.sqs_queue:
        name: "ansible-bench-{{{{ item }}}}"
        state: present
      loop: "{{{{ range(0, {work.queues}) | list }}}}"
    - name: vpcs
      amazon.aws.ec2_vpc_net:
        name: "ansible-bench-{{{{ item }}}}"
        cidr_block: "10.{{{{ item }}}}.0.0/16"
        state: present
      loop: "{{{{ range(0, {work.vpcs}) | list }}}}"
      register: vpcs
    - name: subnets
      amazon.aws.ec2_vpc_subnet:
        vpc_id: "{{{{ item.0.vpc.id }}}}"
        cidr: "10.{{{{ item.0.item }}}}.{{{{ item.1 }}}}.0/24"
        state: present
      loop: "{{{{ vpcs.results | product(range(0, {SUBNETS_PER_VPC})) | list }}}}"
"""


def run_ansible_twice(work: Work, url: str, directory: Path, venv: Path) -> tuple[float, float]:
    playbook_command = ansible_venv(venv)
    playbook = directory / "playbook.yml"
    playbook.write_text(ansible_playbook(work, url))
    env = {**os.environ, "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
           "ANSIBLE_PYTHON_INTERPRETER": str(venv / "bin" / "python"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_HOME": str(directory / "ansible-home"), "ANSIBLE_STDOUT_CALLBACK": "default"}
    times = []
    for expected_changed in (True, False):
        started = time.perf_counter()
        result = subprocess.run([str(playbook_command), "-i", "localhost,", str(playbook)], capture_output=True,
                                text=True, env=env, timeout=3600)
        times.append(time.perf_counter() - started)
        recap = result.stdout[result.stdout.rfind("PLAY RECAP"):]
        if result.returncode != 0 or "failed=0" not in recap:
            sys.exit(f"ansible-playbook failed:\n{result.stdout[-4000:]}{result.stderr[-2000:]}")
        if not expected_changed and "changed=0" not in recap:
            print(f"note: Ansible's second run still reported changes: {recap.strip()}")
    return times[0], times[1]


# -- the world --------------------------------------------------------------------------------------------------

@contextmanager
def environment(directory: Path) -> Iterator[None]:
    """Dummy credentials and a private HOME for everything the bench starts."""
    saved = dict(os.environ)
    home = directory / "home"
    home.mkdir()
    os.environ.update({**aws_environment(directory), "HOME": str(home), "XDG_DATA_HOME": str(home / ".local/share"),
                       "XDG_CONFIG_HOME": str(home / ".config"), "SVC_PID_FILE": str(directory / "agent.pid")})
    for name in ("AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_SESSION_TOKEN"):
        os.environ.pop(name, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def counted(url: str, prefix: str) -> dict[str, int]:
    """What exists in moto under a tool's names: buckets, queues, VPCs (by CIDR 10.n/16 ⇒ all) and subnets."""
    def client(service: str):  # noqa: ANN202 - a boto3 client
        return boto3.client(service, region_name=AWS_TEST_REGION, endpoint_url=url)
    buckets = [b for b in client("s3").list_buckets()["Buckets"] if b["Name"].startswith(prefix)]
    queues = client("sqs").list_queues(QueueNamePrefix=prefix).get("QueueUrls") or []
    ec2 = client("ec2")
    vpcs = [v for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")]
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [v["VpcId"] for v in vpcs] or ["none"]}])
    return {"buckets": len(buckets), "queues": len(queues), "vpcs": len(vpcs), "subnets": len(subnets["Subnets"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--buckets", type=int, default=50)
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--vpcs", type=int, default=10)
    parser.add_argument("--ansible-venv", type=Path, default=ROOT / ".venv" / "ansible-bench")
    options = parser.parse_args()
    work = Work(options.buckets, options.queues, options.vpcs)
    expected = {"buckets": work.buckets, "queues": work.queues, "vpcs": work.vpcs,
                "subnets": work.vpcs * SUBNETS_PER_VPC}
    with tempfile.TemporaryDirectory(prefix="svc-bench-aws-") as temporary:
        directory = Path(temporary)
        with environment(directory), moto_server(directory / "moto.log") as url:
            print(f"work: {work.buckets} buckets, {work.queues} queues, {work.vpcs} VPCs with {SUBNETS_PER_VPC} "
                  f"subnets each ({work.total} resources), moto_server at {url}", flush=True)
            svc_create, svc_again = run_svc_twice(work, url, directory)
            if (found := counted(url, "svc-bench")) != expected:
                sys.exit(f"svc left {found} in moto, expected {expected}")
            reset(url)  # Ansible starts from the same empty account
            ansible_create, ansible_again = run_ansible_twice(work, url, directory, options.ansible_venv)
            if (found := counted(url, "ansible-bench")) != expected:
                sys.exit(f"Ansible left {found} in moto, expected {expected}")
    print(f"\n{'run':<22}{'svc':>10}{'Ansible':>10}{'svc ÷ Ansible':>16}")
    for name, mine, theirs in (("create everything", svc_create, ansible_create),
                               ("nothing to change", svc_again, ansible_again)):
        verdict = "svc faster" if mine < theirs else "Ansible faster"
        print(f"{name:<22}{mine:>9.1f}s{theirs:>9.1f}s{mine / theirs:>15.2f}   {verdict}")


if __name__ == "__main__":
    main()
