"""What an agent's start leaves out: the libraries only some starts need are imported when one does.

Alembic (with Mako and Pygments) only when the database is not at the newest revision yet, psycopg only for
PostgreSQL, the ``libext:``/``tfvars:`` readers' libraries only when a config or forma calls them, boto3 in the
AWS plugin's process with the first session (the agent waits for that process before it answers). Each start
of an agent paid for all of them before (about a fifth of a cached start's CPU). And the collector runs on the
agent's thresholds from the CLI's first import, not on CPython's defaults while a few hundred modules load.
Checked in a fresh interpreter, as an agent or a plugin process starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.datastores import sqlite_config
from svc.collector import THRESHOLDS
from svc.datastore import open_datastore
from svc.datastore.migrate import declared_head, head_revision

_AWS_PLUGIN = """
import json, sys
from svc_plugin_aws import Plugin
plugin = Plugin()
before = "boto3" in sys.modules
plugin.sessions.for_target({"Region": "eu-west-1"})
print(json.dumps([before, "boto3" in sys.modules]))
"""

_OPEN_AGAIN = """
import json, sys
from svc.config.model import DatastoreConfig
from svc.collector import THRESHOLDS
from svc.datastore import open_datastore
from svc.pkl.ext import ext_readers
store = open_datastore(DatastoreConfig.model_validate(json.loads(sys.argv[1])))
store.close()
print(json.dumps(sorted(name for name in ("alembic", "psycopg", "hcl2", "cryptography", "bcrypt")
                        if name in sys.modules)))
"""


def test_the_cli_collects_garbage_on_the_agents_thresholds_from_its_first_import() -> None:
    result = subprocess.run([sys.executable, "-c", "import gc, svc.cli; print(list(gc.get_threshold()))"],
                            capture_output=True, text=True, check=True, timeout=120)
    assert tuple(json.loads(result.stdout)) == THRESHOLDS


def test_the_declared_head_is_alembics() -> None:
    assert declared_head() == head_revision()


def test_a_datastore_at_head_opens_without_alembic_or_psycopg(tmp_path: Path) -> None:
    config = sqlite_config(tmp_path / "svc.db")
    open_datastore(config).close()  # made and migrated: by Alembic
    result = subprocess.run([sys.executable, "-c", _OPEN_AGAIN, config.model_dump_json(by_alias=True)],
                            capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(result.stdout) == []


def test_the_aws_plugin_starts_without_boto3_and_imports_it_with_its_first_session() -> None:
    result = subprocess.run([sys.executable, "-c", _AWS_PLUGIN], capture_output=True, text=True, check=True,
                            timeout=120)
    assert json.loads(result.stdout) == [False, True]
