"""The warm CLI server the ``svc`` console script hands its commands to (``svc.launcher``).

Started by a command that found none (``python -P -m svc.cli.server BASE KEY``), it takes the lock
``BASE.lock`` (a second one started meanwhile leaves), imports the whole CLI once, listens on ``BASE.sock``
(its directory is the user's alone) and runs each command in a worker it forked ahead (``svc.cli.worker``): a
spare, in a process group of its own (the client passes its signals to that group), which took the page faults of
what earlier workers wrote while nobody waited (``svc.cli.prefault``) and waits on a socketpair for its command.
Given one, the worker takes the command's standard streams, working directory, umask and environment and runs it
as the console script would in its own process; it tells the client its exit code as it exits, then the server
which pages it wrote, and the server reports an end it could not tell (a signal) and forks the next spare.
Single-threaded, so forking is safe; one loop over the listener, the spare's and each worker's process file
descriptor and each client's connection.

The server also keeps a ``pkl server`` and lends it to each spare (``svc.pkl.server.Lendable``): the forma of a
command evaluates in a Pkl server warm from the commands before (about half the time of a new one's), which is
stopped whenever no command evaluates. A worker forked on demand (a second command while the spare runs one)
evaluates in a Pkl server of its own; one whose evaluation went wrong, or grew the Pkl server past
``MAX_LENT_RSS``, leaves the next spare a new one.

The server leaves when it has been idle for ``IDLE_SECONDS``, when one of the files it imported changed on disk
(an upgrade, an edit of a checkout: it refuses the command, which runs in its own process, and the next command
starts a server of the new code), and on SIGTERM; in each case once its running workers have ended. A client
whose connection drops (killed) has its worker hung up on, as a closed terminal would.
"""

from __future__ import annotations

import fcntl
import gc
import importlib
import os
import select
import selectors
import signal
import socket
import struct
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from svc.cli.prefault import MAX_SPANS, Span, merged, read_report
from svc.cli.source_watch import SourceWatch
from svc.cli.worker import GO, pkl_word, read_pkl_word, wait_for_command
from svc.handoff import EXITED, REFUSED, STARTED, Request, decode_request, record, rest_of_message
from svc.pkl.binary import PklBinaryError
from svc.pkl.kept_evaluators import KeptEvaluators
from svc.pkl.server import Lendable

IDLE_SECONDS = 600.0  # SVC_CLI_SERVER_IDLE, in the environment of the command that starts the server
_REQUEST_TIMEOUT = 5.0  # a client sends its request as it connects


def main() -> None:
    base, key = sys.argv[1], sys.argv[2]
    lock = os.open(base + ".lock", os.O_RDWR | os.O_CREAT, 0o600)  # held for the server's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another server runs, or is starting
    os.ftruncate(lock, 0)
    os.pwrite(lock, f"{os.getpid()}\n".encode(), 0)  # for whoever wants to see it (bench/vs_terraform.py)
    try:
        preload()
    except BaseException:
        Path(base + ".failed").write_text(traceback.format_exc())
        raise
    Path(base + ".failed").unlink(missing_ok=True)
    sources = SourceWatch(_imported_paths())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    Path(base + ".sock").unlink(missing_ok=True)  # a server that died left it
    listener.bind(base + ".sock")
    listener.listen(64)
    try:
        _Server(listener, key, sources, lock, _idle_seconds()).serve()
    finally:
        sources.close()
        Path(base + ".sock").unlink(missing_ok=True)  # no other server binds it before this one lets go of the lock


def _idle_seconds() -> float:
    try:
        return max(float(os.environ.get("SVC_CLI_SERVER_IDLE", IDLE_SECONDS)), 0.0)
    except ValueError:
        return IDLE_SECONDS


def preload() -> None:
    """Imports what the commands import: every command's module, and what they import as they run."""
    from svc.cli.lazy import fully_loaded
    from svc.cli.main import click_command
    from svc.plugins.installed import installed_plugins

    fully_loaded(click_command())
    installed_plugins()  # kept while the import path's directories are as they are
    for name in ("svc.cli.watch", "svc.cli.progress", "svc.cli.plan_render", "svc.cli.render", "svc.cli.tables",
                 "svc.forma.evaluate", "svc.pkl.server", "svc.pkl_assets", "svc.agent", "svc.config",
                 "svc.model.forma", "rich.console", "rich.live", "rich.table", "encodings.idna",
                 "importlib.resources.readers", "importlib.readers", "typer._click.decorators",
                 "typer._click._textwrap", "rich._emoji_codes"):
        __import__(name)
    _describe_shapes(msgspec.Struct)
    _build_forma_model()
    _import_dependencies_of("typer.rich_utils")  # --help's: Rich's markdown and panels
    gc.collect()
    gc.freeze()  # what every worker shares, never walked by their collections


def _build_forma_model() -> None:
    """Builds the forma model's validator and serializer (deferred until a first use, ``defer_build``) once for all
    the workers: ``svc eval`` validates what Pkl rendered, and each worker built them again (~5 ms of every
    ``svc eval``, a fifth of one of a small forma)."""
    from svc.model.forma import Forma

    Forma.model_rebuild(force=True)


def _import_dependencies_of(name: str) -> None:
    """Imports what module ``name`` imports but not the module itself: it reads the environment as it is imported
    (Typer's help reads ``FORCE_COLOR`` and ``TERMINAL_WIDTH``), which must be each command's, not the server's."""
    package, _, attribute = name.rpartition(".")
    importlib.import_module(name)
    del sys.modules[name]
    delattr(sys.modules[package], attribute)


def _describe_shapes(base: type) -> None:
    """Has msgspec describe every struct of svc's (the agent's answers, the config's ``cli`` block) as it does on
    a struct's first decoding (~10 ms of a command's first answers), once for all the workers."""
    for shape in base.__subclasses__():
        if shape.__module__.startswith("svc."):
            msgspec.json.Decoder(shape)
        _describe_shapes(shape)


def _imported_paths() -> list[str]:
    return [path for module in list(sys.modules.values()) if isinstance(path := getattr(module, "__file__", None), str)]


class _Spare:
    """A worker forked before its command: it waits on ``channel`` for the command the server gives it. ``pkl``: the
    Pkl server it was forked with (its pipes), which the server may lend it with the command."""

    def __init__(self, pid: int, channel: socket.socket, pkl: Lendable | None) -> None:
        self.pid = pid
        self.channel = channel
        self.pkl = pkl

    def hand(self, request: bytes, descriptors: list[int]) -> bool:
        """Sends the command (the client's request, its connection and standard streams); False if the spare is
        gone."""
        message = len(request).to_bytes(4, "big") + request
        try:
            sent = socket.send_fds(self.channel, [message], descriptors)
            self.channel.sendall(message[sent:])
            return True
        except OSError:
            self.discard()
            return False

    def go(self, lent: KeptEvaluators | None) -> None:
        """Lets it run the command, now that its client knows its process id, with the Pkl server it was forked
        with if ``lent`` (its evaluators), else without. The channel stays open: the worker tells through it, as it
        ends, whether it gives the Pkl server back and which pages it wrote (``svc.cli.prefault``)."""
        try:
            self.channel.sendall(GO + pkl_word(lent))
        except OSError:
            pass  # it died: its end is reported as any worker's

    def discard(self) -> None:
        """Closes the channel: a spare that was given no command leaves."""
        self.channel.close()


class _Server:
    def __init__(self, listener: socket.socket, key: str, sources: SourceWatch, lock: int, idle: float) -> None:
        self.listener: socket.socket | None = listener
        self.lock = lock
        self.idle = idle
        self.key = key
        self.sources = sources
        self.selector = selectors.DefaultSelector()
        self.workers: dict[int, socket.socket] = {}  # process id → its client's connection
        self.channels: dict[int, socket.socket] = {}  # process id → the channel of a worker given its command
        self.answered: set[int] = set()  # the workers whose word on the Pkl server was read (``_given_back``)
        self.written: list[Span] = []  # what the workers wrote of the memory they shared with the server
        self.ended: dict[int, int] = {}  # process id → its process file descriptor, for each worker and the spare
        self.spare: _Spare | None = None
        self.pkl: Lendable | None = None  # the Pkl server lent to each spare in turn
        self.pkl_lent_to: int | None = None  # the process id of the worker that has it
        self.selector.register(listener, selectors.EVENT_READ, self._accept)
        # SIGTERM: stop listening, leave once the running commands have ended. Python retries a select() its signal
        # handler interrupted (PEP 475); a byte on this pipe, written by the interpreter as the signal arrives,
        # ends that wait so that the loop sees it.
        self.terminated = False
        self.wakeup = os.pipe()
        os.set_blocking(self.wakeup[1], False)
        signal.set_wakeup_fd(self.wakeup[1])
        self.selector.register(self.wakeup[0], selectors.EVENT_READ, lambda fd: os.read(fd, 512))
        signal.signal(signal.SIGTERM, lambda number, frame: setattr(self, "terminated", True))

    def serve(self) -> None:
        self._keep_spare()
        try:
            while self.listener is not None or self.workers:
                events = self.selector.select(None if self.workers else self.idle)
                if not events and not self.workers:
                    return  # idle
                dispatch(self.selector, events)
                if self.terminated:
                    self._stop_listening()
        finally:
            self._drop_spare()
            for pid in set(self.ended) - set(self.workers):  # a spare, leaving now that its channel is closed
                os.waitpid(pid, 0)
            self._drop_pkl()

    def _let_go(self) -> None:
        """In a worker: closes what is the server's, so that only the server holds its lock, its listener and the
        other clients' connections (a client's end of its connection then closes when the server's does). It keeps
        the Pkl server's pipes until it knows whether it is lent the Pkl server (``svc.cli.worker``)."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for descriptor in (self.lock, *self.wakeup, *self.ended.values()):
            os.close(descriptor)
        self.selector.close()
        self.sources.close()
        for held in (self.listener, *self.workers.values(), *self.channels.values()):
            if held is not None:
                held.close()

    def _stop_listening(self) -> None:
        if self.listener is not None:
            self.selector.unregister(self.listener)
            Path(self.listener.getsockname()).unlink(missing_ok=True)
            self.listener.close()
            self.listener = None
        self._drop_spare()

    def _keep_spare(self) -> None:
        """Forks the next command's worker ahead of it while the server listens and has none: the fork (~2 ms)
        and the faults of the pages it shares with the server (~7 ms of a short command, ``svc.cli.prefault``)
        are then taken while nobody waits."""
        if self.spare is None and self.listener is not None:
            self.spare = self._fork(ahead=True)

    def _lendable_pkl(self) -> Lendable | None:
        """The Pkl server a spare forked now may be lent with its command, started if there is none; None if none
        can start (the command's own evaluation then says why)."""
        if self.pkl is None:
            try:
                self.pkl = Lendable.start()
            except (PklBinaryError, OSError):
                return None
        return self.pkl

    def _drop_pkl(self) -> None:
        if self.pkl is not None:
            self.pkl.close()
            self.pkl = None

    def _drop_spare(self) -> None:
        if self.spare is not None:
            self.spare.discard()
            self.spare = None

    def _fork(self, *, ahead: bool) -> _Spare:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pkl = self._lendable_pkl()
        pid = os.fork()
        if pid == 0:
            ours.close()
            self._let_go()
            wait_for_command(theirs, self.written if ahead else None, pkl)
        theirs.close()
        ended = self.ended[pid] = os.pidfd_open(pid)
        self.selector.register(ended, selectors.EVENT_READ, lambda fd: self._ended(pid, fd))
        return _Spare(pid, ours, pkl)

    def _lend(self, worker: _Spare) -> KeptEvaluators | None:
        """Lends the Pkl server to ``worker`` with its command, if no other worker has it and it is the one
        ``worker`` was forked with: the evaluators it keeps; None when it goes without."""
        holder = self.pkl_lent_to
        if holder is not None and holder in self.channels and holder not in self.answered and \
                select.select([self.channels[holder]], [], [], 0)[0]:  # given back, but this command was read first
            self._given_back(holder)
        if self.pkl is None or self.pkl_lent_to is not None or worker.pkl is not self.pkl:
            return None
        self.pkl_lent_to = worker.pid
        return self.pkl.evaluators

    def _accept(self, listener: socket.socket) -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        try:
            request, raw, descriptors = _receive(connection)
        except (OSError, ValueError, EOFError, TypeError):
            connection.close()
            return
        try:
            if request[0] != self.key or self.sources.changed():
                connection.sendall(record(REFUSED, 0))
                if request[0] == self.key:
                    self._stop_listening()  # its code changed: the next command starts a server of the new one
                connection.close()
                return
            worker = self._hand_over(raw, [connection.fileno(), *descriptors])
        finally:
            for descriptor in descriptors:
                os.close(descriptor)
        if worker is None:
            connection.close()
            return
        self.workers[worker.pid] = connection
        self.channels[worker.pid] = worker.channel
        try:
            connection.sendall(record(STARTED, worker.pid))
        except OSError:
            pass
        worker.go(self._lend(worker))  # only now: its exit code must not reach the client before its process id
        self.selector.register(connection, selectors.EVENT_READ, lambda conn: self._hung_up(worker.pid, conn))
        self.selector.register(worker.channel, selectors.EVENT_READ, lambda channel: self._given_back(worker.pid))

    def _hand_over(self, request: bytes, descriptors: list[int]) -> _Spare | None:
        """Gives the command to the spare, or to a worker forked now when there is none (two commands at once) or
        it has gone; None if that one is gone too."""
        spare, self.spare = self.spare, None
        if spare is not None and spare.hand(request, descriptors):
            return spare
        worker = self._fork(ahead=False)
        return worker if worker.hand(request, descriptors) else None

    def _given_back(self, pid: int) -> None:
        """Reads a worker's first word as its command ends (``svc.cli.worker``: before it tells its client, and long
        before its process has exited), whether the Pkl server it borrowed may be lent again: a command that follows
        at once (a script's next line) then finds it free, rather than going without it and starting a Pkl server of
        its own (~100 ms more). A worker that dies without a word is read here too, as it ends: nothing, the Pkl
        server is not lent again."""
        channel = self.channels[pid]
        self.selector.unregister(channel)
        self.answered.add(pid)
        evaluators = _pkl_given_back(channel)  # the pages' report follows it (``_ended``)
        if self.pkl_lent_to == pid:
            self.pkl_lent_to = None
            if evaluators is None:
                self._drop_pkl()
            elif self.pkl is not None:
                self.pkl.evaluators = evaluators

    def _ended(self, pid: int, ended: int) -> None:
        self.selector.unregister(ended)
        os.close(self.ended.pop(pid))
        _, status = os.waitpid(pid, 0)
        if self.spare is not None and self.spare.pid == pid:  # died waiting: the next command forks its worker
            self._drop_spare()
            return
        if pid in self.channels and pid not in self.answered:
            self._given_back(pid)
        self.answered.discard(pid)
        channel = self.channels.pop(pid, None)
        if channel is not None:
            self.written = merged([*self.written, *read_report(channel)])[:MAX_SPANS]
            channel.close()
        connection = self.workers.pop(pid, None)
        if connection is not None and connection.fileno() >= 0:
            self.selector.unregister(connection)
            try:
                connection.sendall(record(EXITED, os.waitstatus_to_exitcode(status)))
            except OSError:
                pass
            connection.close()
        self._keep_spare()

    def _hung_up(self, worker: int, connection: socket.socket) -> None:
        """The client sends nothing after its request: readable means it closed its end, killed (its worker must not
        run on unseen) or done (its worker told it the exit code and is exiting: the hang-up is then moot)."""
        try:
            data = connection.recv(1)
        except OSError:
            data = b""
        if data:
            return
        self.selector.unregister(connection)
        connection.close()
        try:
            os.killpg(worker, signal.SIGHUP)
        except OSError:
            pass


def dispatch(selector: selectors.BaseSelector, events: list[tuple[selectors.SelectorKey, int]]) -> None:
    """Calls the callback of each ready registration, but not of one that an earlier callback of the same round
    unregistered: a worker's end and its client's hang-up can be ready together (the client leaves as soon as the
    worker has told it the exit code), and the reaping closes the connection the hang-up would read."""
    for selected, _ in events:
        if selector.get_map().get(selected.fd) is not selected:
            continue
        callback: Callable[[Any], None] = selected.data
        callback(selected.fileobj)


def _receive(connection: socket.socket) -> tuple[Request, bytes, list[int]]:
    """The client's request (decoded, and as it came) and its three standard streams' descriptors."""
    connection.settimeout(_REQUEST_TIMEOUT)
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", credentials)
    data, descriptors, _, _ = socket.recv_fds(connection, 65536, 3)
    if uid != os.getuid() or len(descriptors) != 3:
        for descriptor in descriptors:
            os.close(descriptor)
        raise ValueError("not this user's, or without its streams")
    try:
        raw = rest_of_message(connection, data)
        request = decode_request(raw)
    except BaseException:
        for descriptor in descriptors:
            os.close(descriptor)
        raise
    connection.settimeout(None)
    return request, raw, descriptors


def _pkl_given_back(channel: socket.socket) -> KeptEvaluators | None:
    """What a worker said of the Pkl server lent to it as its command ended (``svc.cli.worker``): the evaluators it
    keeps, or None when it may not be lent again. It sends its word whole, before it tells its client."""
    try:
        channel.setblocking(False)
        return read_pkl_word(channel)
    except (OSError, ValueError, EOFError):
        return None


if __name__ == "__main__":
    main()
