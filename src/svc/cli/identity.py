"""The CLI's persistent client id (a KSUID in the data dir), sent as ``Client-ID`` on every request.

It is what ``client:me`` queries and "my latest command" mean, so it must survive across runs.
"""

from __future__ import annotations

from svc.ids import persistent_id
from svc.paths import data_dir

CLIENT_ID_FILE = "cli_client_id"


def client_id() -> str:
    return persistent_id(data_dir() / CLIENT_ID_FILE)
