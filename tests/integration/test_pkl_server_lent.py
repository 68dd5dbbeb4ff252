"""A ``pkl server`` lent by the process that started it (the CLI server lends one to each command's worker): it runs
only while its borrower evaluates, stopped otherwise, and goes back to its lender only when nothing of the borrower's
conversation can confuse the next one (real Pkl; the lender and the borrower are this one process here)."""

from __future__ import annotations

import logging
import marshal
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.processes import process_state, stopped_within
from svc.cli import server as cli_server
from svc.cli import worker as cli_worker
from svc.pkl import EvaluationRequest, PklError, find_pkl
from svc.pkl import server as pkl_server
from svc.pkl.kept_evaluators import KeptEvaluators
from svc.pkl.server import Lendable, PklServer

REQUEST = EvaluationRequest(module_uri="repl:text", module_text='x = read("env:GREETING")', expression="x")


@pytest.fixture
def lendable() -> Iterator[Lendable]:
    lent = Lendable.start()
    yield lent
    lent.close()


def test_a_lent_server_runs_only_while_it_evaluates(lendable: Lendable, monkeypatch: pytest.MonkeyPatch) -> None:
    server = PklServer(lent=lendable.process)
    for greeting in ("hello", "hi"):  # each evaluation with the borrower's environment
        monkeypatch.setenv("GREETING", greeting)
        assert server.evaluate(REQUEST) == greeting
        assert server.pid == lendable.process.pid and process_state(server.pid) != "T"
        server.close(wait=False)  # done evaluating: stopped, not killed
        assert server.pid == lendable.process.pid and stopped_within(server.pid)
    assert server.give_back() is not None
    assert stopped_within(lendable.process.pid)
    # The next borrower resumes it.
    again = PklServer(lent=lendable.process)
    assert again.evaluate(REQUEST) == "hi"
    assert again.give_back() is not None


def test_the_evaluators_a_borrower_kept_serve_the_next_borrower(lendable: Lendable, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "settings.pkl"
    module.write_text("x = 0\n")

    def request(text: str) -> EvaluationRequest:
        return EvaluationRequest(module_uri=module.as_uri(), module_text=text, expression="x", reuse_key="settings")

    first = PklServer(lent=lendable.process, evaluators=lendable.evaluators)
    assert first.evaluate(request("x = 1")) == 1
    kept = first.give_back()
    assert kept is not None and len(kept.ids()) == 1
    created: list[Any] = []
    monkeypatch.setattr(PklServer, "_create_evaluator", lambda *args: created.append(args))
    second = PklServer(lent=lendable.process, evaluators=kept)
    assert second.evaluate(request("x = 2")) == 2  # its own text, in the evaluator the first one kept
    assert created == []
    again = second.give_back()
    assert again is not None and again.ids() == kept.ids()


def test_an_evaluator_kept_in_the_table_but_gone_from_the_server_fails_nothing(lendable: Lendable,
                                                                               tmp_path: Path) -> None:
    """Only a bug could leave such an entry; Pkl answers an unknown evaluator with an error, which must never be the
    forma's: the evaluation runs again in a new evaluator."""
    module = tmp_path / "settings.pkl"
    request = EvaluationRequest(module_uri=module.as_uri(), module_text="x = 1\n", expression="x", reuse_key="s")
    first = PklServer(lent=lendable.process, evaluators=lendable.evaluators)
    assert first.evaluate(request) == 1
    kept = first.give_back()
    assert kept is not None
    gone = KeptEvaluators.from_bytes(marshal.dumps({key: (evaluator_id + 1_000_003, uses)
                                                    for key, (evaluator_id, uses) in marshal.loads(kept.to_bytes()).items()}))
    second = PklServer(lent=lendable.process, evaluators=gone)
    assert second.evaluate(request) == 1


def test_the_server_hears_from_its_worker_which_evaluators_the_lent_server_keeps(lendable: Lendable) -> None:
    lendable.evaluators.keep("settings", 5, 1)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(cli_worker._word_on_pkl(lendable, borrowed=False) + b"the rest")
        kept = cli_server._pkl_given_back(ours)
        assert kept is not None and kept.ids() == [5]
        assert ours.recv(64) == b"the rest"  # what the worker reports next (the pages it wrote)
        theirs.sendall(cli_worker.PKL_LOST)
        assert cli_server._pkl_given_back(ours) is None


def test_a_lent_server_is_not_given_back_after_an_error_or_past_its_memory_bound(
        lendable: Lendable, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREETING", "hello")
    server = PklServer(lent=lendable.process)
    with pytest.raises(PklError):  # pkl server may repeat an error after its answer: the next borrower would read it
        server.evaluate(EvaluationRequest(module_uri="repl:text", module_text="x = nope", expression="x"))
    assert server.give_back() is None
    server = PklServer(lent=lendable.process)
    assert server.evaluate(REQUEST) == "hello"
    monkeypatch.setattr(pkl_server, "MAX_LENT_RSS", 1024)
    assert server.give_back() is None


def test_a_lent_server_that_died_is_replaced_by_one_of_the_borrowers_own(lendable: Lendable,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREETING", "hello")
    server = PklServer(lent=lendable.process)
    os.kill(lendable.process.pid, signal.SIGKILL)
    try:
        assert server.evaluate(REQUEST) == "hello"  # retried on a new server
        assert server.pid != lendable.process.pid
        assert server.give_back() is None
    finally:
        server.close()


def test_a_borrower_using_another_pkl_binary_keeps_to_its_own(lendable: Lendable, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    assert pkl_server.borrow_shared_server(lendable)
    try:
        assert pkl_server.shared_server().pid == lendable.process.pid
    finally:
        pkl_server.give_back_shared_server()
    other = tmp_path / "pkl"
    other.symlink_to(os.path.realpath(lendable.binary[0]))
    monkeypatch.setenv("SVC_PKL", str(other))
    find_pkl.cache_clear()
    try:
        assert not pkl_server.borrow_shared_server(lendable)
        monkeypatch.setenv("SVC_PKL", str(tmp_path / "missing"))  # the command's evaluation says so, not this
        find_pkl.cache_clear()
        assert not pkl_server.borrow_shared_server(lendable)
    finally:
        find_pkl.cache_clear()


def test_a_borrower_that_keeps_pkls_compiler_keeps_to_its_own_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lent server runs without Pkl's compiler (its lender's setting); a command run with ``SVC_PKL_JIT=on``
    evaluates in a server of its own, which has it."""
    monkeypatch.delenv("SVC_PKL_JIT", raising=False)
    lendable = Lendable.start()
    try:
        monkeypatch.setenv("SVC_PKL_JIT", "on")
        assert not pkl_server.borrow_shared_server(lendable)
        monkeypatch.delenv("SVC_PKL_JIT")
        assert pkl_server.borrow_shared_server(lendable)
        pkl_server.give_back_shared_server()
    finally:
        lendable.close()


def test_the_lenders_choice_of_binary_is_not_kept_for_its_borrowers(lendable: Lendable) -> None:
    """The CLI server starts the Pkl server it lends before it forks its workers, which choose their binary in the
    command's environment ($SVC_PKL): the lender's choice is not left cached for them."""
    assert find_pkl.cache_info().currsize == 0


STAND_IN = r"""
import os, sys, msgpack
unpacker = msgpack.Unpacker(raw=False)
def send(code, body):
    os.write(1, msgpack.packb([code, body]))
while chunk := os.read(0, 65536):
    unpacker.feed(chunk)
    for code, body in unpacker:
        if code == 0x20:  # create an evaluator: first, a late second answer to an earlier borrower's evaluation
            send(0x24, {"requestId": 2, "evaluatorId": 1, "result": msgpack.packb("an earlier borrower's")})
            send(0x21, {"requestId": body["requestId"], "evaluatorId": 1})
        elif code == 0x23:
            send(0x24, {"requestId": body["requestId"], "evaluatorId": 1, "result": msgpack.packb("this one's")})
"""


def test_a_repeated_answer_to_an_earlier_borrower_is_recognised_as_one(caplog: pytest.LogCaptureFixture) -> None:
    """pkl server 0.30 sometimes answers an evaluation twice; the second answer to an earlier borrower's request can
    reach the next borrower, who numbers its requests after theirs and drops it (a stand-in for pkl server that
    does this every time)."""
    stand_in = subprocess.Popen([sys.executable, "-c", STAND_IN], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        server = PklServer(lent=stand_in)
        with caplog.at_level(logging.DEBUG, logger="svc.pkl"):
            assert server.evaluate(REQUEST) == "this one's"
        assert server.pid == stand_in.pid and "retrying" not in caplog.text
    finally:
        stand_in.kill()
        stand_in.wait()
