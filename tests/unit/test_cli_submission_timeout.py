"""A submission waits for the agent's plan for longer the larger its forma: 30 s, and a second per 100 kB."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svc.cli import agent_api, http

ANSWER = {"CommandId": "c1", "Simulation": {"ChangesRequired": False}}


class Recording:
    """An agent client that answers every request alike and keeps what each was sent with."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> http.Response:
        self.sent.append(kwargs)
        return http.Response(200, content=json.dumps(ANSWER).encode())


@pytest.mark.parametrize(("resources", "at_least", "at_most"), [(1, 30.0, 31.0), (20_000, 60.0, 200.0)])
def test_the_wait_for_a_plan_grows_with_the_forma(resources: int, at_least: float, at_most: float) -> None:
    client = Recording()
    forma = {"Resources": [{"Label": f"r{n}", "Properties": {"Value": "x" * 200}} for n in range(resources)]}
    agent_api.submit(client, command="apply", action="apply", forma=forma)  # type: ignore[arg-type]
    timeout: http.Timeout = client.sent[0]["timeout"]
    assert timeout.seconds is not None and at_least <= timeout.seconds <= at_most and timeout.connect == 5.0


def test_a_submission_without_a_forma_keeps_the_clients_timeout() -> None:
    client = Recording()
    agent_api.submit(client, command="destroy", action="destroy", query="stack:a")  # type: ignore[arg-type]
    assert "timeout" not in client.sent[0]
