"""svc runs Pkl without its JIT compiler (``svc.pkl.binary.interpreter_only``): the real native binary started under
the address-space limit, its compiler idle through an evaluation that would be compiled; ``SVC_PKL_JIT=on`` keeps
the compiler."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.pkl import EvaluationRequest
from svc.pkl.binary import INTERPRETER_ONLY_ADDRESS_SPACE, JIT_VARIABLE
from svc.pkl.server import PklServer

# Recursive enough that Pkl's compiler takes it up within the evaluation when it can (~0.1 s with the compiler,
# ~0.3 s without).
HOT = EvaluationRequest(module_uri="repl:text", expression="x",
                        module_text="function fib(n: Int): Int = if (n < 2) n else fib(n - 1) + fib(n - 2)\nx = fib(28)")


def _address_space_limit(pid: int) -> str:
    line = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
                if line.startswith("Max address space"))
    return line.split()[3]


def _compiler_cpu_seconds(pid: int) -> float:
    """CPU seconds of the process's compiler threads (``TruffleCompilerThread-…``, named by their last 15
    characters)."""
    return sum(int((task / "schedstat").read_text().split()[0]) for task in Path(f"/proc/{pid}/task").iterdir()
               if "mpilerThread" in (task / "comm").read_text()) / 1e9


def _evaluated(monkeypatch: pytest.MonkeyPatch, jit: str) -> tuple[str, float]:
    """The server's address-space limit and its compiler's CPU seconds after the hot evaluation."""
    monkeypatch.setenv(JIT_VARIABLE, jit)
    server = PklServer()
    try:
        assert server.evaluate(HOT) == 317811
        assert server.pid is not None
        return _address_space_limit(server.pid), _compiler_cpu_seconds(server.pid)
    finally:
        server.close()


def test_pkl_evaluates_without_its_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    limit, compiling = _evaluated(monkeypatch, "")
    assert limit == str(INTERPRETER_ONLY_ADDRESS_SPACE)
    assert compiling < 0.005  # it starts, finds no room for its isolate, and stops: with room, ~50 ms here


def test_svc_pkl_jit_on_keeps_the_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    # The other side of the test above: the measure sees a compiler that works.
    limit, compiling = _evaluated(monkeypatch, "on")
    assert limit == "unlimited"
    assert compiling > 0.0
