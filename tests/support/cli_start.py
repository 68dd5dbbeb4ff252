"""Which modules the real CLI imports to run a command: for the start-up tests (issue 28 item 10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping

# What a short command has no use for: the agent's server and storage stack, the cloud SDK, the libraries of
# Pkl's libext:/tfvars: readers, YAML, asyncio, the forma evaluator and model, and the real click (Typer has its
# own), pydantic (the CLI's shapes are msgspec structs), httpx (the CLI's client is ``svc.cli.http``). Each of
# these showed on the start-up path of `svc --version` or `svc inventory` before.
HEAVY = ("sqlalchemy", "alembic", "psycopg", "boto3", "botocore", "starlette", "uvicorn", "cryptography", "bcrypt",
         "lark", "hcl2", "yaml", "click", "asyncio", "svc.engine", "svc.datastore", "svc.api",
         "svc.agent.lifecycle", "svc.plugins.host", "svc.plugins.pip_runs", "svc.forma", "svc.model.forma", "pydantic",
         "httpx")

_PROBE = """
import json, sys
from svc.cli.main import main
code = main(sys.argv[1:])
imported = [name for name, module in sys.modules.items() if module is not None]  # None: an import refused
print(json.dumps({"code": code, "modules": imported}), file=sys.stderr)
"""


def loaded_modules(*args: str, env: Mapping[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter has imported after running ``svc ARGS`` (which must succeed); ``env``
    its environment (default: this process's)."""
    result = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120,
                            env={"COLUMNS": "120", **(os.environ if env is None else env)})
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, result.stdout + result.stderr
    return set(report["modules"])


def imported(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    """The ``modules`` that are one of ``prefixes`` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))
