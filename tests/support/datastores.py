"""Datastore configs for tests and benches that open an agent's datastore themselves."""

from __future__ import annotations

from pathlib import Path

from svc.config.model import DatastoreConfig


def sqlite_config(path: Path | str) -> DatastoreConfig:
    """The embedded SQLite datastore at ``path`` (``":memory:"``: one in memory)."""
    return DatastoreConfig.model_validate({
        "datastoreType": "sqlite", "sqlite": {"filePath": str(path)},
        "postgres": {"host": "", "port": 5432, "user": "", "password": "", "database": "", "schema": "",
                     "connectionParams": ""},
        "auroraDataAPI": {"clusterArn": "", "secretArn": "", "database": "", "region": "", "endpoint": ""}})
