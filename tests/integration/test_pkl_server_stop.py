"""Stopping the Pkl server without waiting for it to exit: ``svc plan`` and ``svc apply`` stop it once they have
evaluated, then talk to the agent while it gives its memory back; the CLI's last stop reaps it."""

from __future__ import annotations

from pathlib import Path

from svc.pkl import EvaluationRequest
from svc.pkl.server import PklServer


def _state(pid: int) -> str | None:
    """The process's state letter (Z: exited, not reaped), or None once it has been reaped."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    return next(line.split()[1] for line in status.splitlines() if line.startswith("State:"))


def test_a_server_stopped_without_waiting_is_reaped_by_the_next_stop() -> None:
    server = PklServer()
    assert server.evaluate(EvaluationRequest(module_uri="repl:text", module_text="x = 1", expression="x")) == 1
    pid = server.pid
    assert pid is not None

    server.close(wait=False)

    assert server.pid is None
    assert _state(pid) is not None  # killed, still this process's child to reap
    server.close()
    assert _state(pid) is None


def test_a_server_stopped_without_waiting_starts_again_on_the_next_evaluation() -> None:
    server = PklServer()
    request = EvaluationRequest(module_uri="repl:text", module_text="x = 2", expression="x")
    assert server.evaluate(request) == 2
    server.close(wait=False)
    try:
        assert server.evaluate(request) == 2
    finally:
        server.close()
