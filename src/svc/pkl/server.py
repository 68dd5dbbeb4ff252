"""A client of ``pkl server``: Pkl's message-passing API (MessagePack over the child's stdio).

One server process is shared by every evaluation in this Python process (it is started on first
use and restarted if it dies). Each evaluation gets a fresh evaluator inside that process so that
Pkl's module cache never serves a file as it was before an edit, unless its caller names everything the result
depends on (``EvaluationRequest.reuse_key``): it may then run in an evaluator kept from an earlier evaluation of
the same modules (``svc.pkl.kept_evaluators``).

A process can also borrow one that another process started (``Lendable``: the CLI server keeps one for the commands
it runs, ``svc.cli.server``). A server that has evaluated before evaluates again in about half the time (its code is
warm, its compiler has worked on it), but that compiler then keeps a CPU busy for seconds, which the command that
follows the evaluation (the agent's work) needs: so a lent server runs only while it is used, and is stopped
(``SIGSTOP``) the rest of the time, from its borrower's ``stop_shared_server`` to the next evaluation.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import logging
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgpack

from svc.pkl.binary import PklBinaryError, address_space_limiter, find_pkl, interpreter_only
from svc.pkl.kept_evaluators import MAX_KEPT_ANSWER, KeptEvaluators, evaluated_uri, plain_uri
from svc.pkl.readers import ModuleReader, ResourceReader

log = logging.getLogger("svc.pkl")

# Message codes of the Pkl message-passing API.
_CREATE_EVALUATOR = 0x20
_CREATE_EVALUATOR_RESPONSE = 0x21
_CLOSE_EVALUATOR = 0x22
_EVALUATE = 0x23
_EVALUATE_RESPONSE = 0x24
_LOG = 0x25
_READ_RESOURCE = 0x26
_READ_RESOURCE_RESPONSE = 0x27
_READ_MODULE = 0x28
_READ_MODULE_RESPONSE = 0x29
_LIST_RESOURCES = 0x2A
_LIST_RESOURCES_RESPONSE = 0x2B
_LIST_MODULES = 0x2C
_LIST_MODULES_RESPONSE = 0x2D

MAX_ANSWER_BYTES = 2**32 - 1  # msgpack's largest buffer: one message of the server, undecoded

_STANDARD_MODULES = ["pkl:", "repl:", "file:", "https:", "package:", "projectpackage:", "modulepath:"]
_STANDARD_RESOURCES = ["env:", "prop:", "file:", "https:", "package:", "projectpackage:", "modulepath:"]


_PR_SET_PDEATHSIG = 1
# A lent server that has grown past this is not lent again: it holds its memory while it waits, stopped.
MAX_LENT_RSS = 320 * 1024 * 1024

# The client-side readers of one evaluation, by scheme: (module readers, resource readers).
_Readers = tuple[dict[str, ModuleReader], dict[str, ResourceReader]]

T = TypeVar("T")
# Expressions to evaluate in one module, each sent the value of the one before it; returns what the evaluation
# gives its caller (``PklServer.converse``).
Conversation = Generator[str, Any, T]


def _single(expression: str) -> Conversation[Any]:
    return (yield expression)


_EXPRESSION_FRAME = "\nat  (repl:text)"  # an error's frame of the expression evaluated (it has no member's name)


class PklError(Exception):
    """Pkl rejected the evaluation; ``str()`` is Pkl's own message, with file and line."""

    def __init__(self, message: str) -> None:
        # Pkl's message is blocks separated by blank lines: the headline, then stack frames. The
        # banner, the frames inside Pkl's own output rendering and that of the expression the evaluation asked
        # for (``EvaluationRequest.expression``, svc's own) say nothing about the user's file.
        blocks = message.replace("–– Pkl Error ––", "").strip().split("\n\n")
        kept = [block for block in blocks
                if "at pkl.base#Module.output" not in block and not block.endswith(_EXPRESSION_FRAME)]
        super().__init__("\n\n".join(kept).strip())

    @property
    def headline(self) -> str:
        """The first line of Pkl's message, e.g. ``Type constraint `isBetween(0, 65535)` violated.``"""
        return str(self).splitlines()[0] if str(self) else "Pkl evaluation failed"


class PklServerError(RuntimeError):
    """The ``pkl server`` process failed or broke the protocol."""


@dataclass
class EvaluationRequest:
    module_uri: str
    expression: str = "output.text"
    module_text: str | None = None
    readers: Sequence[ModuleReader] = ()
    resource_readers: Sequence[ResourceReader] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    root_dir: str | None = None
    project: Mapping[str, Any] | None = None
    # Set by a caller whose module's value depends on nothing but ``module_text`` (then required), the properties
    # and the modules it imports, whose contents this key names (the environment plays no part): it may be
    # evaluated in an evaluator kept from an earlier request with the same key and settings.
    reuse_key: str | None = None


def _start_process(binary: Path, *, dies_with_parent: bool = False) -> subprocess.Popen[bytes]:
    """``pkl server``, without its JIT compiler unless the user keeps it (``svc.pkl.binary.interpreter_only``)."""
    steps = [_die_with_parent] if dies_with_parent else []
    if interpreter_only(binary):
        steps.append(address_space_limiter())
    return subprocess.Popen([str(binary), "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, preexec_fn=functools.partial(_run_all, steps) if steps else None)


def _run_all(steps: list[Callable[[], None]]) -> None:
    for step in steps:
        step()


def _die_with_parent() -> None:
    """In the child before it runs Pkl: killed when its parent dies (Linux's ``PR_SET_PDEATHSIG``), however the
    parent ends. A lent server waits stopped; orphaned, it would wait forever."""
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: its lender kills it as it leaves
        pass


def _identity(binary: Path) -> tuple[str, int, int, bool]:
    """The binary as it is now (a server started from it before an upgrade runs the old one), and whether it runs
    without its compiler (``$SVC_PKL_JIT`` of the process that started it)."""
    stat = binary.stat()
    return str(binary), stat.st_ino, stat.st_mtime_ns, interpreter_only(binary)


@dataclass
class Lendable:
    """A ``pkl server`` this process started to lend, one borrower at a time, to the processes it forks
    (``borrow_shared_server``); it runs only while a borrower uses it."""

    process: subprocess.Popen[bytes]
    binary: tuple[str, int, int, bool]
    evaluators: KeptEvaluators = field(default_factory=KeptEvaluators)  # as the last borrower left them

    @classmethod
    def start(cls) -> Lendable:
        binary = find_pkl()
        find_pkl.cache_clear()  # this process's choice, which its borrowers make again in their own environment
        return cls(_start_process(binary, dies_with_parent=True), _identity(binary))

    def close(self) -> None:
        """Kills it and waits for it (a stopped process is killed as well)."""
        self.process.kill()
        self.process.wait()


class PklServer:
    """One ``pkl server`` child process (or a ``Lendable``'s, lent to this one); evaluations are serialised through
    it."""

    def __init__(self, lent: subprocess.Popen[bytes] | None = None, evaluators: KeptEvaluators | None = None) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._unpacker: msgpack.Unpacker | None = None
        self._evaluators = KeptEvaluators()  # the process's
        self._next_id = 0
        # pkl server 0.30 sometimes repeats an evaluation's error after its answer, as a bare string (written
        # with the next message it sends): the last error answered, to recognise that copy.
        self._answered_error: str | None = None
        self._exiting: list[subprocess.Popen[bytes]] = []  # killed, not yet reaped (close(wait=False))
        # A process another one started and lends (stopped until used; another's child, never waited for here).
        self._lent = lent
        self._stopped = lent is not None
        if lent is not None:
            self._use(lent, evaluators)
            # Numbered after every earlier borrower's requests: pkl server 0.30 sometimes answers an evaluation
            # twice, and a second answer to one of theirs, read by this one, is then recognised as a repeat.
            self._next_id = time.monotonic_ns() // 1000

    # -- process lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Starts the process now, if it is not running, without waiting for it: it boots (~6 ms) while the caller
        prepares the evaluation it is about to ask for."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> None:
        if self._process is not None and self._process is self._lent:
            if self._stopped:  # a lent process's death shows as the conversation's end (then retried here)
                _signal(self._process, signal.SIGCONT)
                self._stopped = False
            return
        if self._process is not None and self._process.poll() is None:
            return
        self._use(_start_process(find_pkl()))

    def _use(self, process: subprocess.Popen[bytes], evaluators: KeptEvaluators | None = None) -> None:
        self._process = process
        self._evaluators = evaluators or KeptEvaluators()
        # msgpack's default buffer (100 MiB) is smaller than one evaluation's answer for a forma of 100,000
        # resources (BufferFull): the server is ours, so its answers are bounded by the forma, not by a guess.
        self._unpacker = msgpack.Unpacker(raw=False, max_buffer_size=MAX_ANSWER_BYTES)
        self._answered_error = None

    def close(self, *, wait: bool = True) -> None:
        """Stops the server: kills it, or stops a lent one until the next evaluation. ``wait=False`` returns once it
        is killed, before it has exited: a server that evaluated a big forma takes tens of milliseconds to give its
        memory back (60 ms at 1,000 resources), which a caller with other work to do need not wait for; the next
        ``close()`` reaps it."""
        with self._lock:
            if self._process is not None and self._process is self._lent:
                self._stop_lent()
            else:
                self._discard_process(wait=wait)

    def _stop_lent(self) -> None:
        if not self._stopped:
            _signal(self._process, signal.SIGSTOP)
            self._stopped = True

    def give_back(self) -> KeptEvaluators | None:
        """Stops the lent process; its evaluators kept for the next borrower, or None when it may not be lent again:
        this one no longer uses it (its conversation went out of step), it has more to say (pkl server 0.30 may
        repeat an error after its answer, which the next borrower would take for an answer of its own), or it
        holds ``MAX_LENT_RSS`` or more."""
        with self._lock:
            process = self._process
            if process is None or process is not self._lent or process.stdout is None:
                return None
            self._stop_lent()
            if self._answered_error is not None or self._unread(process.stdout):
                return None
            return self._evaluators if _resident_bytes(process.pid) < MAX_LENT_RSS else None

    def _unread(self, stdout: Any) -> bool:
        """Whether the server said more than this one read: in the pipe, or decoded no further."""
        if select.select([stdout], [], [], 0)[0]:
            return True
        for _ in self._unpacker or ():
            return True
        return False

    def _discard_process(self, *, wait: bool = True) -> None:
        """Kills the server (under the lock); the next evaluation starts a new one. A lent one is killed for its
        lender to reap."""
        if self._process is not None and self._process is self._lent:
            _signal(self._process, signal.SIGKILL)
            self._process = None
        elif self._process is not None:
            self._process.kill()
            self._exiting.append(self._process)
            self._process = None
        if wait:
            for process in self._exiting:
                process.wait()
            self._exiting.clear()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    # -- wire ----------------------------------------------------------------------------------
    def _request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, code: int, body: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(msgpack.packb([code, body]))
        self._process.stdin.flush()

    def _receive(self) -> tuple[int, dict[str, Any]]:
        assert self._process is not None and self._process.stdout is not None and self._unpacker is not None
        while True:
            for message in self._unpacker:
                if isinstance(message, str) and message == self._answered_error:
                    log.debug("dropped a repeated error message")
                    self._answered_error = None
                    continue
                if (not isinstance(message, (list, tuple)) or len(message) != 2 or not isinstance(message[0], int)
                        or not isinstance(message[1], dict)):
                    raise PklServerError(f"pkl server sent a malformed message: {_shape(message)}")
                return message[0], message[1]
            chunk = os.read(self._process.stdout.fileno(), 65536)
            if not chunk:
                raise PklServerError("pkl server exited unexpectedly")
            self._unpacker.feed(chunk)

    def _wait_for(self, wanted: int, request_id: int, readers: _Readers) -> dict[str, Any]:
        """Reads messages until the response to ``request_id``, serving the server's read requests."""
        while True:
            code, body = self._receive()
            if code == wanted and body.get("requestId") == request_id:
                return body
            if code in (_CREATE_EVALUATOR_RESPONSE, _EVALUATE_RESPONSE) and body.get("requestId", 0) < request_id:
                # pkl server 0.30 sometimes answers an evaluation twice; the first answer was used.
                log.debug("dropped a repeated response to request %s", body.get("requestId"))
                continue
            if code == _LOG:
                log.log(logging.WARNING if body.get("level") == 1 else logging.DEBUG,
                        "pkl: %s (%s)", body.get("message"), body.get("frameUri"))
            elif code in (_READ_MODULE, _LIST_MODULES, _READ_RESOURCE, _LIST_RESOURCES):
                self._serve_read(code, body, readers)
            else:
                raise PklServerError(f"unexpected message {code:#x} from pkl server (fields {sorted(body)})")

    def _serve_read(self, code: int, body: dict[str, Any], readers: _Readers) -> None:
        uri = body["uri"]
        reply = {"requestId": body["requestId"], "evaluatorId": body["evaluatorId"]}
        resource = code in (_READ_RESOURCE, _LIST_RESOURCES)
        reader = (readers[1] if resource else readers[0]).get(uri.partition(":")[0])
        try:
            if reader is None:
                raise FileNotFoundError(f"no reader for {uri}")
            if code in (_READ_MODULE, _READ_RESOURCE):
                reply["contents"] = reader.read(uri)
            else:
                reply["pathElements"] = [{"name": e.name, "isDirectory": e.is_directory} for e in reader.list(uri)]
        except Exception as exc:  # any reader failure becomes a Pkl error naming the URI
            reply["error"] = str(exc)
        response = {
            _READ_MODULE: _READ_MODULE_RESPONSE,
            _LIST_MODULES: _LIST_MODULES_RESPONSE,
            _READ_RESOURCE: _READ_RESOURCE_RESPONSE,
            _LIST_RESOURCES: _LIST_RESOURCES_RESPONSE,
        }[code]
        self._send(response, reply)

    # -- evaluation --------------------------------------------------------------------------
    def evaluate(self, request: EvaluationRequest) -> Any:
        """Evaluates ``request.expression`` in the module and returns the decoded value."""
        return self.converse(request, lambda: _single(request.expression))

    def converse(self, request: EvaluationRequest, conversation: Callable[[], Conversation[T]]) -> T:
        """Evaluates the expressions ``conversation()`` yields, one after the other, in one evaluator of the module
        (each is sent the previous one's decoded value), and returns what the conversation returns. The module is
        evaluated once: each expression reads what the ones before it evaluated. A large value is better read in
        parts (``svc.pkl.slices``): ``pkl server`` copies an answer several times over as it encodes it, each
        copy a collection of the whole heap while the module's objects are all alive (a 24 MB one took 2.4 s)."""
        with self._lock:
            borrowed = self._process is not None and self._process is self._lent
            try:
                return self._converse_once(request, conversation)
            except (OSError, PklServerError) as error:
                # Evaluation has no side effects, so one retry on a fresh server hides a hiccup of the old one. A
                # borrowed one that fails is no news to the user (its lender lends none that failed again).
                log.log(logging.DEBUG if borrowed else logging.WARNING, "%s; retrying on a new pkl server", error)
                return self._converse_once(request, conversation)

    def _converse_once(self, request: EvaluationRequest, conversation: Callable[[], Conversation[T]]) -> T:
        try:
            return self._converse_locked(request, conversation)
        except PklError:
            raise  # an answer: the conversation is intact
        except BaseException:
            self._discard_process()  # dead, or its stream no longer in step with ours
            raise

    def _converse_locked(self, request: EvaluationRequest, conversation: Callable[[], Conversation[T]]) -> T:
        self._ensure_started()
        modules = {reader.scheme: reader for reader in request.readers}
        resources = {reader.scheme: reader for reader in request.resource_readers}
        readers: _Readers = (modules, resources)
        settings = _evaluator_settings(request, modules, resources)
        key = None if request.reuse_key is None or request.module_text is None else _table_key(request, settings)
        taken = self._evaluators.take(key) if key is not None else None
        evaluator_id, uses = taken if taken is not None else (self._create_evaluator(settings, readers), 0)
        module_uri = request.module_uri if key is None else evaluated_uri(request.module_uri, self._request_id())
        answered = 0  # bytes of the answers so far, as Pkl sent them
        error: str | None = None
        finished = False  # the conversation ended with its result (not cut short by an error or an exception)
        try:
            steps = conversation()
            value: Any = None
            while True:
                try:
                    expression = steps.send(value)
                except StopIteration as stop:
                    result: T = stop.value
                    finished = True
                    break
                evaluate_id = self._request_id()
                evaluate: dict[str, Any] = {
                    "requestId": evaluate_id,
                    "evaluatorId": evaluator_id,
                    "moduleUri": module_uri,
                    "expr": expression,
                }
                if request.module_text is not None:
                    evaluate["moduleText"] = request.module_text
                self._send(_EVALUATE, evaluate)
                answer = self._wait_for(_EVALUATE_RESPONSE, evaluate_id, readers)
                error = answer.get("error")
                if error:
                    break
                answered += len(answer["result"])
                value = msgpack.unpackb(answer["result"], raw=False)
        finally:
            kept = key is not None and finished and answered <= MAX_KEPT_ANSWER
            retired = self._evaluators.keep(key, evaluator_id, uses + 1) if key is not None and kept else [evaluator_id]
            for retired_id in retired:
                self._send(_CLOSE_EVALUATOR, {"evaluatorId": retired_id})
        if error:
            self._answered_error = error
            if taken is not None:  # a kept evaluator is never why an evaluation fails: a new one has the last word
                return self._converse_locked(request, conversation)
            raise PklError(plain_uri(error, module_uri, request.module_uri))
        return result

    def _create_evaluator(self, settings: dict[str, Any], readers: _Readers) -> int:
        create_id = self._request_id()
        self._send(_CREATE_EVALUATOR, {"requestId": create_id, **settings, "env": dict(os.environ)})
        created = self._wait_for(_CREATE_EVALUATOR_RESPONSE, create_id, readers)
        if created.get("error"):
            raise PklServerError(f"pkl server refused to create an evaluator: {created['error']}")
        return int(created["evaluatorId"])


def _evaluator_settings(request: EvaluationRequest, modules: Mapping[str, ModuleReader],
                        resources: Mapping[str, ResourceReader]) -> dict[str, Any]:
    """What an evaluator for ``request`` is created with, but its environment."""
    settings: dict[str, Any] = {
        "allowedModules": _STANDARD_MODULES + [f"{scheme}:" for scheme in modules],
        "allowedResources": _STANDARD_RESOURCES + [f"{scheme}:" for scheme in resources],
        "clientModuleReaders": [
            {"scheme": r.scheme, "hasHierarchicalUris": r.is_hierarchical, "isGlobbable": r.is_globbable,
             "isLocal": r.is_local}
            for r in modules.values()
        ],
        "clientResourceReaders": [
            {"scheme": r.scheme, "hasHierarchicalUris": r.is_hierarchical, "isGlobbable": r.is_globbable}
            for r in resources.values()
        ],
        "properties": dict(request.properties),
    }
    if request.root_dir:
        settings["rootDir"] = request.root_dir
    if request.project:
        settings["project"] = dict(request.project)
    return settings


def _table_key(request: EvaluationRequest, settings: Mapping[str, Any]) -> str:
    """Which kept evaluator may evaluate ``request``: one for the same modules, created with the same settings."""
    text = json.dumps([request.reuse_key, settings], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _signal(process: subprocess.Popen[bytes], number: int) -> None:
    try:
        os.kill(process.pid, number)
    except ProcessLookupError:  # gone: the next message read or written says so
        pass


def _resident_bytes(pid: int) -> int:
    """The process's resident memory; unknown counts as too much."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return MAX_LENT_RSS


def _shape(message: Any) -> str:
    """What a message looks like, without its values (which can hold a forma's secrets)."""
    if isinstance(message, (list, tuple)):
        return f"an array of {len(message)} ({', '.join(type(item).__name__ for item in message[:3])})"
    return f"a {type(message).__name__}"


_shared: PklServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> PklServer:
    """The process-wide ``pkl server``, started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = PklServer()
        return _shared


def borrow_shared_server(lendable: Lendable) -> bool:
    """Makes ``lendable``'s process, which the process that forked this one started, the process-wide server of
    this one; not when the Pkl binary this process would use is another (or was upgraded since it started)."""
    global _shared
    try:
        if _identity(find_pkl()) != lendable.binary:
            return False
    except (OSError, PklBinaryError):  # none to use: the command's own evaluation says why
        return False
    with _shared_lock:
        _shared = PklServer(lent=lendable.process, evaluators=lendable.evaluators)
    return True


def give_back_shared_server() -> KeptEvaluators | None:
    """Stops the process-wide server if it is a borrowed one; its evaluators kept for the next borrower, or None
    when it may not be lent again (``PklServer.give_back``). For a borrower about to end."""
    with _shared_lock:
        server = _shared
    return server.give_back() if server is not None else None


def stop_shared_server(*, wait: bool = True) -> None:
    """Stops the process-wide ``pkl server`` if it runs (a later evaluation starts another, or resumes a borrowed
    one). For a process that is done evaluating but not exiting: the server's JIT compiler keeps working on a CPU
    for a while after an evaluation, and ``svc apply`` then waits for the agent, whose command it would slow down.
    ``wait`` as for ``PklServer.close``."""
    with _shared_lock:
        server = _shared
    if server is not None:
        server.close(wait=wait)
