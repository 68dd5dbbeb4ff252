"""``claim_single_agent``: one agent per SQLite file, by an exclusive flock on ``<file>.agent.lock``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from svc.config.model import DatastoreConfig
from svc.datastore import DatastoreError, claim_single_agent, open_datastore
from svc.datastore.sqlite_claim import lock_path

ConfigFactory = Callable[..., DatastoreConfig]


def test_one_claim_per_file_until_released(datastore_config: ConfigFactory, tmp_path: Path) -> None:
    database = tmp_path / "data" / "svc.db"  # its directory does not exist yet
    config = datastore_config("sqlite", sqlite_path=str(database))
    with claim_single_agent(config):
        assert lock_path(database).read_text().strip() == str(os.getpid())
        # flock locks belong to open files, so a second claim conflicts even from the same process.
        with pytest.raises(DatastoreError) as refused, claim_single_agent(config):
            pass
        assert str(refused.value) == (
            f"the SQLite datastore {database} is in use by another agent (PID {os.getpid()}); SQLite serves one "
            "agent: to run several agents on one datastore, use PostgreSQL or the Aurora Data API")
        # Opening the datastore does not claim: tools and tests read and write alongside the agent.
        store = open_datastore(config)
        store.create_stack("beside-the-agent")
        store.close()
        other = datastore_config("sqlite", sqlite_path=str(tmp_path / "other.db"))
        with claim_single_agent(other):  # another file, another claim
            pass
    with claim_single_agent(config):  # released on exit
        pass


def test_nothing_to_claim_in_memory_or_on_a_server(datastore_config: ConfigFactory) -> None:
    for config in (datastore_config("sqlite", sqlite_path=":memory:"), datastore_config("postgres")):
        with claim_single_agent(config), claim_single_agent(config):
            pass
