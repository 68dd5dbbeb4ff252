"""Stopping the Pkl server without waiting for it to exit: ``svc plan`` and ``svc apply`` stop it once they have
evaluated, then talk to the agent while it gives its memory back; the CLI's last stop reaps it."""

from __future__ import annotations

from support.processes import process_state
from svc.pkl import EvaluationRequest
from svc.pkl.server import PklServer


def test_a_server_stopped_without_waiting_is_reaped_by_the_next_stop() -> None:
    server = PklServer()
    assert server.evaluate(EvaluationRequest(module_uri="repl:text", module_text="x = 1", expression="x")) == 1
    pid = server.pid
    assert pid is not None

    server.close(wait=False)

    assert server.pid is None
    assert process_state(pid) is not None  # killed, still this process's child to reap
    server.close()
    assert process_state(pid) is None


def test_a_server_stopped_without_waiting_starts_again_on_the_next_evaluation() -> None:
    server = PklServer()
    request = EvaluationRequest(module_uri="repl:text", module_text="x = 2", expression="x")
    assert server.evaluate(request) == 2
    server.close(wait=False)
    try:
        assert server.evaluate(request) == 2
    finally:
        server.close()
