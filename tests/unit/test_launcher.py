"""The console script's hand-off to the CLI server (``svc.launcher``): which commands may go, where the socket
lives (a directory only this user can enter), and which server fits a command."""

from __future__ import annotations

import _socket
import ast
import codecs
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from svc import handoff, launcher


@pytest.mark.parametrize(("args", "environ", "wanted"), [
    (["plan", "main.pkl"], {}, True),
    (["inventory"], {"SVC_CLI_SERVER": "on"}, True),
    (["plan", "main.pkl"], {"SVC_CLI_SERVER": "off"}, False),
    (["plan", "main.pkl"], {"SVC_CLI_SERVER": " 0 "}, False),
    (["agent", "start"], {}, False),  # becomes the agent
    (["agent", "start", "--config", "agent.pkl"], {}, False),
    (["agent", "stop"], {}, True),
    (["upgrade", "--version", "1.2.3"], {}, False),  # replaces the installation the server runs
    (["--show-completion"], {}, False),  # looks for the user's shell among its parent processes
    (["--install-completion", "bash"], {}, False),
])
def test_which_commands_the_server_may_run(args: list[str], environ: dict[str, str], wanted: bool) -> None:
    assert launcher.server_wanted(args, environ) is wanted


def test_the_runtime_directory_is_this_users_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    made = handoff.runtime_dir()
    assert made == str(tmp_path / "svc") and (os.stat(made).st_mode & 0o777) == 0o700

    os.chmod(made, 0o755)  # others may enter: a socket there is not this user's alone
    assert handoff.runtime_dir() is None
    os.chmod(made, 0o700)
    assert handoff.runtime_dir() == made

    os.rmdir(made)
    os.symlink(tmp_path, made)  # a link planted where the directory goes
    assert handoff.runtime_dir() is None


def test_without_xdg_runtime_dir_it_is_under_the_temporary_directory(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert handoff.runtime_dir() == str(tmp_path / f"svc-{os.getuid()}")


def test_a_server_fits_only_the_same_interpreter_and_import_path(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = handoff.identity()
    assert handoff.server_base("/run", mine) == handoff.server_base("/run", handoff.identity())
    monkeypatch.setattr(sys, "path", [*sys.path, "/somewhere/else"])  # PYTHONPATH: other code, another server
    assert handoff.server_base("/run", handoff.identity()) != handoff.server_base("/run", mine)


def test_answers_are_eight_bytes_of_kind_and_signed_value() -> None:
    assert handoff.record(handoff.EXITED, -9) == b"\x00\x00\x00\x02\xff\xff\xff\xf7"
    assert len(handoff.record(handoff.STARTED, 4_000_000)) == handoff.RECORD


def test_a_signal_before_the_worker_starts_is_passed_on_once_it_has() -> None:
    worker = subprocess.Popen(["sleep", "30"], start_new_session=True)  # a process group of its own, as a worker's
    signals = launcher._Signals()
    try:
        signal.raise_signal(signal.SIGTERM)  # before the server answered: kept, not this process's end
        assert worker.poll() is None
        signals.started(worker.pid)
        assert worker.wait(timeout=10) == -signal.SIGTERM
    finally:
        signals.given_back()
        worker.kill()


def test_a_ctrl_c_before_any_worker_took_the_command_ends_it_having_run_nothing() -> None:
    before = signal.getsignal(signal.SIGINT)
    signals = launcher._Signals()
    signal.raise_signal(signal.SIGINT)
    assert signals.given_back() == -signal.SIGINT  # run() then ends this process by SIGINT
    assert signal.getsignal(signal.SIGINT) is before  # the handlers are given back


def test_no_signal_no_worker_runs_the_command_here() -> None:
    assert launcher._Signals().given_back() is None


def test_a_command_the_server_ran_before_this_process_finished_sending_is_not_run_again() -> None:
    """Descheduled right after its request went out (a loaded machine), the client may find the command run and its
    connection closed by the time it goes on: it takes the exit code waiting for it, rather than a broken pipe for
    a server that ran nothing and the command a second time here."""
    ours, theirs = socket.socketpair()
    hung_up = threading.Event()

    class DescheduledAfterSending(_socket.socket):
        def sendmsg(self, *args: object) -> int:
            sent: int = super().sendmsg(*args)
            hung_up.wait(10)
            return sent

    def server() -> None:
        data, descriptors, _, _ = socket.recv_fds(ours, 65536, 3)
        handoff.rest_of_message(ours, data)
        for descriptor in descriptors:
            os.close(descriptor)
        ours.sendall(handoff.record(handoff.STARTED, 2**22 + 1) + handoff.record(handoff.EXITED, 7))
        ours.close()
        hung_up.set()

    handlers = {number: signal.getsignal(number) for number in (*launcher._FORWARDED, signal.SIGTSTP)}
    answering = threading.Thread(target=server)
    answering.start()
    try:
        assert launcher._hand_off(DescheduledAfterSending(fileno=theirs.detach()), ["--version"], "key") == 7
    finally:
        answering.join(10)
        for number, handler in handlers.items():
            signal.signal(number, handler)


STREAMS = [("utf-8", "strict"), ("utf-8", "strict"), ("utf-8", "backslashreplace")]


def test_a_request_carries_the_bytes_the_launcher_was_given_which_read_back_as_python_reads_them() -> None:
    raw = handoff.encode_request("key", [b"plan", b"caf\xc3\xa9.pkl", b"\xff", b""],
                                 {b"HOME": b"/home/u", b"EQUATION": b"a=b", b"EMPTY": b""}, b"/work", 0o027, STREAMS)
    assert raw.count(b"\0") == 5 + 4 + 3
    assert handoff.decode_request(raw) == ("key", ["plan", "café.pkl", "\udcff", ""],
                                           {"HOME": "/home/u", "EQUATION": "a=b", "EMPTY": ""}, "/work", 0o027, STREAMS)
    # What the native launcher sends: the stream encodings left for the worker to work out.
    native = b"key\0/work\x0022\0\x001\0--version\0HOME=/root\0"
    assert handoff.decode_request(native) == ("key", ["--version"], {"HOME": "/root"}, "/work", 0o22, None)


@pytest.mark.parametrize("raw", [
    b"key\0/work\x0022\0\x001\0--version",  # not ended by a NUL
    b"key\0/work\x0022\0\x002\0--version\0",  # fewer arguments than it says
    b"key\0/work\x0022\0\x001\0--version\0HOME\0",  # an environment entry without its value
    b"key\0/work\x0022\0\x001\0--version\0=x\0",  # ... or without its name
    b"key\0work\x0022\0\x001\0--version\0",  # a relative working directory
    b"key\0/work\x0022\0utf-8:strict\x001\0--version\0",  # one stream's encoding of three
    b"key\0/work\x009\0\x001\0--version\0",  # not octal
    b"key\0/work\0",
])
def test_a_malformed_request_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        handoff.decode_request(raw)


_PYTHON_STREAMS = "import sys; print([(s.encoding, s.errors) for s in (sys.stdin, sys.stdout, sys.stderr)])"
_WORKER_STREAMS = ("import json, os, sys; from svc.cli.worker import python_streams; environ = json.loads(sys.argv[1]); "
                   "os.environ.clear(); os.environ.update(environ); print(python_streams(environ))")


@pytest.mark.parametrize("environ", [
    {"LANG": "C.UTF-8"},
    {},  # the C locale, which Python coerces to C.UTF-8
    {"LC_ALL": "C"},  # not coerced: UTF-8 mode
    {"LC_ALL": "C", "PYTHONUTF8": "0"},  # neither: the locale's own ASCII
    {"LANG": "C.UTF-8", "PYTHONUTF8": "1"},
    {"LANG": "C.UTF-8", "PYTHONIOENCODING": "latin-1:replace"},
    {"LC_ALL": "C", "PYTHONIOENCODING": ":ignore"},
    {"LANG": "xx_NOWHERE.UTF-8"},  # a locale this system lacks
])
def test_a_worker_gives_its_streams_the_encodings_python_would_have_given_its_client(environ: dict[str, str]) -> None:
    """The native launcher cannot say how Python would have set up its standard streams: the worker works it out
    from the client's environment, in a process started in another locale, as the server's workers are."""
    client = {"PATH": os.environ["PATH"], **environ}
    python = subprocess.run([sys.executable, "-c", _PYTHON_STREAMS], env=client, capture_output=True, text=True,
                            check=True)
    worker = subprocess.run([sys.executable, "-c", _WORKER_STREAMS, json.dumps(client)], capture_output=True,
                            text=True, check=True, env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8"})

    def normalized(printed: str) -> list[tuple[str, str]]:
        return [(codecs.lookup(encoding).name, errors) for encoding, errors in ast.literal_eval(printed)]

    assert normalized(worker.stdout) == normalized(python.stdout)
