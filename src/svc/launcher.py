"""The ``svc`` console script: runs the command in a warm CLI server when there is one, else in this process.

Importing the CLI (Typer, Rich, msgspec, the HTTP client, the forma evaluator) costs ~0.2 s of CPU before a command
does anything: most of a no-op plan of 10 resources, against Terraform's 0.05 s for its whole plan. So, as Bazel's
and Gradle's clients do, a command that finds no server starts one in the background (``svc.cli.server``), which
imports the CLI once and then forks a worker per command. Later commands hand the server their arguments,
environment, working directory, umask and standard streams (the file descriptors themselves: a terminal stays a
terminal, a pipe a pipe), pass on the signals they get (Ctrl-C) and exit as the worker did.

This module runs first in every command, so it imports only what the interpreter has loaded already and C
modules: ``_socket`` rather than ``socket``, whose enums cost more than the whole hand-off. ``SVC_CLI_SERVER=off``
runs every command in its own process; ``svc agent start`` (which becomes the agent), ``svc upgrade`` (which
replaces the installation) and the completion installers (which look for the user's shell among their parent
processes) always do.
"""

from __future__ import annotations

import _signal
import _socket
import os
import sys
import time

from svc.handoff import EXITED, STARTED, encode_request, identity, read_record, runtime_dir, server_base

_FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)
_FAILED_BACKOFF = 600.0  # after a server failed to start, seconds before a command starts another
_HERE = {("agent", "start"), ("upgrade",)}
# These find the user's shell among the command's parent processes, which a worker's are not.
_HERE_ANYWHERE = {"--install-completion", "--show-completion"}


def server_wanted(args: list[str], environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether this command may run in the server."""
    if environ.get("SVC_CLI_SERVER", "").strip().lower() in ("off", "0", "false", "no"):
        return False
    return not (any(tuple(args[: len(prefix)]) == prefix for prefix in _HERE) or _HERE_ANYWHERE.intersection(args))


def run() -> None:
    """The console-script entry point."""
    args = sys.argv[1:]
    code = _in_server(args) if server_wanted(args, os.environ) else None
    if code is None:
        from svc.cli.main import run as run_here

        run_here()
    elif code < 0:  # ended by a signal: end the same way, as a shell would see it
        if -code not in (_signal.SIGKILL, _signal.SIGSTOP):  # whose handling cannot be changed, nor need be
            _signal.signal(-code, _signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        sys.exit(128 - code)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)  # this interpreter holds nothing to finalise: its end is the command's (~1 ms sooner)


def _in_server(args: list[str]) -> int | None:
    """The worker's exit code (minus a signal), or None when no server took the command."""
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:  # a closed standard stream: run it here
        return None
    directory = runtime_dir()
    if directory is None:
        return None
    key = identity()
    base = server_base(directory, key)
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            connection.connect(base + ".sock")
        except OSError:
            _start_server(base, key)
            return None
        return _hand_off(connection, args, key)
    finally:
        connection.close()


def _hand_off(connection: _socket.socket, args: list[str], key: str) -> int | None:
    signals = _Signals()  # from the request on: a Ctrl-C is the worker's, even one pressed before it started
    try:
        umask = os.umask(0o077)
        os.umask(umask)
        streams = [(stream.encoding, stream.errors) for stream in (sys.stdin, sys.stdout, sys.stderr)]
        request = encode_request(key, [os.fsencode(arg) for arg in args], dict(os.environb), os.getcwdb(), umask,
                                 streams)
        message = len(request).to_bytes(4, "big") + request
        descriptors = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))  # C ints, as SCM_RIGHTS holds
        sent = connection.sendmsg([message], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, descriptors)])
        if sent < len(message):  # never a send of nothing: once all is sent, the command may have run and the
            connection.sendall(message[sent:])  # server closed the connection, so that it would fail (EPIPE)
        kind, worker = read_record(connection)
    except (OSError, ValueError):  # the server went away before it took the command: nothing ran
        kind = worker = 0
    if kind != STARTED:
        return signals.given_back()
    signals.started(worker)
    try:
        kind, value = read_record(connection)
    except (OSError, ValueError):
        kind, value = 0, 0
    if kind == EXITED:
        return value
    _signal_group(worker, _signal.SIGHUP)  # as a terminal's hang-up would: the worker must not run on unseen
    print("Error: the svc CLI server stopped while it ran this command; run it again (SVC_CLI_SERVER=off runs "
          "commands without it)", file=sys.stderr)
    return 1


class _Signals:
    """The signals this process gets go to the worker's process group, as a terminal's Ctrl-C reaches every process
    of the foreground job; Ctrl-Z stops the worker with this process, and ``fg`` continues both. One that comes
    before the worker has started is passed on once it has."""

    def __init__(self) -> None:
        self.worker: int | None = None
        self.pending: list[int] = []
        self.previous = {number: _signal.signal(number, self._got) for number in _FORWARDED}
        self.previous[_signal.SIGTSTP] = _signal.signal(_signal.SIGTSTP, self._suspend)

    def started(self, worker: int) -> None:
        self.worker = worker
        for number in self.pending:
            _signal_group(worker, number)

    def given_back(self) -> int | None:
        """No worker took the command: the signals are this process's again. None: run the command here; minus a
        signal that came meanwhile: end by it, having run nothing."""
        for number, handler in self.previous.items():
            _signal.signal(number, handler)
        return -self.pending[0] if self.pending else None

    def _got(self, number: int, frame: object) -> None:
        if self.worker is None:
            self.pending.append(number)
        else:
            _signal_group(self.worker, number)

    def _suspend(self, number: int, frame: object) -> None:
        if self.worker is not None:
            _signal_group(self.worker, _signal.SIGSTOP)
        _signal.signal(_signal.SIGTSTP, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGTSTP)  # stops here until continued
        _signal.signal(_signal.SIGTSTP, self._suspend)
        if self.worker is not None:
            _signal_group(self.worker, _signal.SIGCONT)


def _signal_group(worker: int, number: int) -> None:
    try:
        os.killpg(worker, number)
    except OSError:  # it has ended
        pass


def _start_server(base: str, key: str) -> None:
    """Starts a server in the background, in a session of its own (a terminal's signals are not for it), reading
    nothing and writing only its log; this command runs here meanwhile. Not within ``_FAILED_BACKOFF`` of a
    failed start."""
    try:
        if time.time() - os.stat(base + ".failed").st_mtime < _FAILED_BACKOFF:
            return
    except OSError:
        pass
    argv = [sys.executable, "-P", "-m", "svc.cli.server", base, key]
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, base + ".log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    try:
        os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions, setsid=True)
    except OSError:
        pass
