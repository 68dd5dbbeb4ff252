"""A CLI server's worker (``svc.cli.server``): forked ahead as a spare, it waits for its command, then becomes the
command's process. It takes the command's standard streams, working directory, umask and environment, runs it as
the console script would in its own process, tells the client its exit code, and then the server, on their
channel, whether the Pkl server it was lent may be lent again (``PKL_KEPT``, with the evaluators it keeps) and
which pages it wrote (``svc.cli.prefault``)."""

from __future__ import annotations

import atexit
import ctypes
import io
import locale
import os
import select
import signal
import socket
import sys
import traceback
from typing import NoReturn

from svc.cli.prefault import Span, prefault, report_written
from svc.handoff import EXITED, Request, decode_request, record, rest_of_message
from svc.pkl.kept_evaluators import KeptEvaluators
from svc.pkl.server import Lendable, borrow_shared_server, give_back_shared_server

GO = b"g"  # after a command given to a spare: run it
# A worker's first word on its channel as it ends: whether the Pkl server it borrowed may be lent again. A worker
# lent one follows ``PKL_KEPT`` with the table of its kept evaluators (its size in 4 bytes, then itself).
PKL_KEPT, PKL_LOST = b"k", b"-"
SPARE_NAME = b"svc-cli-spare"  # a spare's process name until it takes a command
_PR_SET_NAME, _PR_GET_NAME = 15, 16


def wait_for_command(channel: socket.socket, written: list[Span] | None, pkl: Lendable | None) -> NoReturn:
    """In a spare: takes the faults of the pages earlier workers ``written`` ahead (None: none, it is needed at
    once), waits for a command and runs it as its worker (``work``), with ``pkl`` lent to it; leaves when the
    server goes away or drops it."""
    try:
        os.setpgid(0, 0)  # the group the client passes its signals to, from the moment it learns this process id
        name = _rename_process(SPARE_NAME)
        if written is not None:
            prefault(lambda: _readable(channel), written)
        data, descriptors, _, _ = socket.recv_fds(channel, 65536, 4)
        try:
            message = rest_of_message(channel, data, after=len(GO))
            if len(descriptors) != 4 or message[-len(GO):] != GO:
                raise ValueError("no command")
            lent = read_pkl_word(channel)
        except BaseException:
            for descriptor in descriptors:
                os.close(descriptor)
            raise
    except (OSError, ValueError, EOFError):
        os._exit(0)  # the server went away, or dropped this spare
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    _rename_process(name)
    if pkl is not None and lent is None:  # another command has it: this one must not hold its pipes
        for pipe in (pkl.process.stdin, pkl.process.stdout):
            if pipe is not None:
                pipe.close()
    borrowing = Lendable(pkl.process, pkl.binary, lent) if pkl is not None and lent is not None else None
    work(decode_request(message[:-len(GO)]), descriptors[1:], socket.socket(fileno=descriptors[0]), channel,
         borrowing)


def _readable(channel: socket.socket) -> bool:
    poller = select.poll()
    poller.register(channel, select.POLLIN)
    return bool(poller.poll(0))


def _rename_process(name: bytes) -> bytes:
    """Sets the name ``ps -o comm`` and ``/proc/PID/comm`` show (Linux's ``PR_SET_NAME``); the one it had."""
    had = ctypes.create_string_buffer(16)
    try:
        prctl = ctypes.CDLL(None).prctl
        prctl(_PR_GET_NAME, had, 0, 0, 0)
        prctl(_PR_SET_NAME, ctypes.c_char_p(name[:15]), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        pass
    return had.value


def work(request: Request, descriptors: list[int], client: socket.socket, channel: socket.socket,
         pkl: Lendable | None = None) -> NoReturn:
    """In the forked worker: become the command's process, run it, exit with its code, which it tells ``client``
    itself as it exits: the client need not wait for this process's memory to be given back and the server to
    reap it (~2 ms), and a server that died meanwhile does not take the command's outcome with it. The server
    still reports an end this process could not tell (a signal), and hears from this one whether the Pkl server
    ``pkl`` it lent may be lent again."""
    code = 1
    borrowed = False
    try:
        _, args, environ, cwd, umask, streams = request
        for target, descriptor in enumerate(descriptors):
            os.dup2(descriptor, target)
        for descriptor in descriptors:
            if descriptor > 2:
                os.close(descriptor)
        os.chdir(cwd)
        os.umask(umask)
        os.environ.clear()
        os.environ.update(environ)
        streams = streams or python_streams(environ)
        sys.dont_write_bytecode = bool(environ.get("PYTHONDONTWRITEBYTECODE"))  # not part of a server's identity
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.stdin, sys.stdout, sys.stderr = (_stream(fd, mode, *streams[fd]) for fd, mode in enumerate("rww"))
        sys.argv = ["svc", *args]
        borrowed = pkl is not None and borrow_shared_server(pkl)
        code = _command(args)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe: the exit code still goes back
                pass
        for descriptor in (0, 1, 2):  # a reader of the command's output sees its end now, not once this is gone
            try:
                os.close(descriptor)
            except OSError:
                pass
        # The command is over: its client, told the exit code, leaves, and the server's hang-up of this process
        # (``_Server._hung_up``) must not cut short what it does for the next one.
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        try:  # first: the server can lend the Pkl server to the next command before this one's client has left
            channel.sendall(_word_on_pkl(pkl, borrowed))
        except OSError:
            pass
        try:
            client.sendall(record(EXITED, code & 0xFF))  # as the exit status will say it
        except OSError:
            pass
        report_written(channel)  # for the next spare: which pages this one wrote
        os._exit(code)


def _word_on_pkl(pkl: Lendable | None, borrowed: bool) -> bytes:
    """What the server hears of the Pkl server it lent, if it did (``pkl``)."""
    if borrowed:
        return pkl_word(give_back_shared_server())
    return pkl_word(pkl.evaluators if pkl is not None else None)  # one it did not borrow (another Pkl binary)


def pkl_word(evaluators: KeptEvaluators | None) -> bytes:
    """A word on a worker's channel about the Pkl server, from the server with the command (lent, with the
    evaluators it keeps, or not) or from the worker as it ends (it may be lent again, or not): ``PKL_KEPT`` and the
    evaluators, or ``PKL_LOST``."""
    if evaluators is None:
        return PKL_LOST
    table = evaluators.to_bytes()
    return PKL_KEPT + len(table).to_bytes(4, "big") + table


def read_pkl_word(channel: socket.socket) -> KeptEvaluators | None:
    """The evaluators a ``pkl_word`` carries; None for ``PKL_LOST``."""
    if channel.recv(len(PKL_KEPT)) != PKL_KEPT:
        return None
    return KeptEvaluators.from_bytes(rest_of_message(channel, channel.recv(4)))


def python_streams(environ: dict[str, str]) -> list[tuple[str, str]]:
    """The encodings and error handlers Python gives its standard streams in ``environ`` (a launcher that is not
    Python cannot tell them); this process takes ``environ``'s locale as Python would have at start-up."""
    try:
        name = locale.setlocale(locale.LC_CTYPE, "")
    except locale.Error:  # a locale this system lacks: Python then runs in the C locale
        name = locale.setlocale(locale.LC_CTYPE, "C")
    utf8 = environ.get("PYTHONUTF8") == "1" or (name in ("C", "POSIX") and environ.get("PYTHONUTF8") != "0")
    encoding = "utf-8" if utf8 else locale.nl_langinfo(locale.CODESET) or "utf-8"
    # The C locale and those Python coerces it to (PEP 538) keep undecodable bytes rather than fail on them.
    errors = "surrogateescape" if utf8 or name in ("C", "POSIX", "C.UTF-8", "C.utf8", "UTF-8") else "strict"
    given_encoding, _, given_errors = environ.get("PYTHONIOENCODING", "").partition(":")
    encoding, errors = given_encoding or encoding, given_errors or errors
    return [(encoding, errors), (encoding, errors), (encoding, "backslashreplace")]


def _stream(descriptor: int, mode: str, encoding: str, errors: str) -> io.TextIOWrapper:
    """The standard stream over the client's descriptor, as Python made the client's: its encoding and error
    handler; line-buffered on a terminal, and stderr always."""
    buffering = 1 if descriptor == 2 else -1  # -1: line-buffered when a terminal, as open() decides
    return open(descriptor, mode, encoding=encoding, errors=errors, buffering=buffering,  # noqa: SIM115
                closefd=False)


def _command(args: list[str]) -> int:
    """What ``svc.cli.main.run`` does in the command's own process, less the start-up collector tuning the
    server did once: the command, then the exit handlers."""
    from svc.cli.main import main

    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        code: int = main(args)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
    atexit._run_exitfuncs()
    return code
