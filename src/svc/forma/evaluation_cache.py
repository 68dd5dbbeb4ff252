"""A forma's evaluation, kept from one command to the next while nothing it came from has changed.

Evaluating a forma is most of what a command that changes nothing costs: the Pkl server's start, and Pkl reading
and evaluating the forma and the packages it imports (at 1,000 resources a third of a no-op ``svc plan``, at
100,000 most of it). Pkl's result is a function of the files it reads and the properties it is given, so the
rendered document is kept (``$XDG_CACHE_HOME/svc/formas``, one file per forma and property values, mode 0600, the
latest 16) with a SHA-256 of every file it came from: the forma, every module it imports, transitively (through
its ``PklProject``'s local packages and svc's own, which is how plugin schema packages are imported), the
``PklProject`` and its deps file. The next evaluation of the same forma with the same properties, by the same svc
and the same Pkl binary, whose files all hash the same, takes the kept document instead of running Pkl.

Only a forma whose value depends on those files alone is kept (``ModuleFiles(strict=True)``): none of its modules
reads a resource other than a ``prop:`` (``read("env:…")`` is evaluated every time), has a glob import or an
import from elsewhere (``https:``, ``package:``, a remote package), and the document holds no secret (an opaque
value is never written here). ``SVC_EVALUATION_CACHE=off`` turns the cache off. Anything unreadable in the
cache counts as nothing kept.

The command is one of the properties (``$cmd``: ``svc.cmd()``), and most formas never read it: a ``svc destroy``
of the forma just applied, or a ``svc apply`` after ``svc eval``, would run Pkl again for the same document. An
evaluation none of whose modules may read it (``svc.pkl_source.may_read_command``, on their text; svc's own
modules read it only in ``svc.cmd()`` and for the flag names their callers give) is kept for every command.

A new evaluation is written while the command goes on (``store_meanwhile``): hashing the files and writing a
100,000-resource document took 0.8 s, which the command's submission need not wait for (the agent is planning
meanwhile). The process waits for the write at exit (``finish_writes``, an exit handler: a CLI server's worker
ends with ``os._exit``, which waits for no thread), and a lookup in the same process waits for it first.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc import __version__, jsontext
from svc.forma.module_files import ModuleFiles, packages_of
from svc.forma.module_scans import ModuleScans
from svc.model.forma_document import LISTED_SCHEMAS
from svc.model.opaque import document_opaque_fields
from svc.model.values import conceal_secrets
from svc.paths import cache_home, write_private
from svc.pkl import find_pkl
from svc.pkl.packages import svc_package
from svc.pkl.projects import find_project_file

_FORMAT = 1
_KEPT = 16
_OPAQUE = '"$visibility":"Opaque"'
COMMAND_PROPERTY = "$cmd"  # the command a forma is evaluated for (``svc.cmd()``)
_log = logging.getLogger(__name__)
_writing: dict[Path, threading.Thread] = {}  # the entries being written by this process, by path


@dataclass(frozen=True)
class Sources:
    """What an evaluation is made of, read before Pkl reads it: the SHA-256 of each file, by path, and whether a
    module that is not svc's own may read the command (``svc.pkl_source.may_read_command``; svc's own read it only
    for their callers). Pkl may evaluate the forma's text as it was read here (``forma_text``) in an evaluator that
    loaded the other files as they are now (``evaluator_key``, their digests; ``svc.pkl.kept_evaluators``): not when
    another module imports the forma (Pkl would load that one from the file), nor when it is not UTF-8."""

    digests: dict[str, str]
    may_read_command: bool
    forma_text: str | None = None
    evaluator_key: str | None = None


def cache_enabled() -> bool:
    return os.environ.get("SVC_EVALUATION_CACHE", "").lower() not in ("off", "0", "false", "no")


class EvaluationCache:
    """The kept evaluation of one forma with one set of property values."""

    def __init__(self, forma: Path, properties: Mapping[str, str], directory: Path | None = None) -> None:
        self.forma = forma.resolve()
        self._project_file = find_project_file(self.forma.parent)
        directory = directory or cache_home() / "formas"
        exact = dict(sorted(properties.items()))
        any_command = {name: value for name, value in exact.items() if name != COMMAND_PROPERTY}
        # Where an evaluation for these properties is kept; then where one that serves every command is.
        self._entries = {directory / self._name(exact): exact}
        self._entries.setdefault(directory / self._name(any_command), any_command)
        self.path = next(iter(self._entries))
        self.any_command_path = next(reversed(self._entries))

    def _name(self, properties: Mapping[str, str]) -> str:
        key = json.dumps([str(self.forma), properties], separators=(",", ":"))
        return f"{_digest(key.encode())[:32]}.json"

    def lookup(self) -> dict[str, Any] | None:
        """The kept document, if everything it came from is as it was; else None."""
        for path, properties in self._entries.items():
            document = self._kept(path, properties)
            if document is not None:
                return document
        return None

    def _kept(self, path: Path, properties: Mapping[str, str]) -> dict[str, Any] | None:
        try:
            entry = jsontext.loads(_settled(path).read_bytes())
            if entry.get("Format") != _FORMAT or entry.get("Inputs") != self._inputs(properties):
                return None
            for file, digest in entry["Files"].items():
                if _file_digest(Path(file)) != digest:
                    return None
            document = entry["Document"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return document if isinstance(document, dict) else None

    def outdated_by_forma(self) -> bool:
        """Whether the forma file changed after its evaluation was kept (or none is): then ``lookup`` finds nothing,
        which two ``stat`` calls tell before it reads and hashes anything. False says nothing for sure."""
        try:
            edited = self.forma.stat().st_mtime_ns
        except OSError:
            return True
        return not any(_written(path) >= edited for path in self._entries)

    def sources(self, project: Mapping[str, Any]) -> Sources | None:
        """Every file the forma's evaluation reads, taken before Pkl reads them (a file edited meanwhile then fails
        the next lookup instead of passing it with the old document); None for a forma that is never kept.
        ``project``: the evaluation's project, whose local packages the forma imports from."""
        scans = ModuleScans.kept()
        files_of = ModuleFiles(packages_of(project), strict=True, scans=scans)
        modules = files_of.closure(self.forma)
        scans.save()
        if modules is None:
            return None
        digests = {module: files_of.read[module][1] for module in modules}
        if self._project_file is not None:
            try:
                for file in (self._project_file, self._project_file.with_name("PklProject.deps.json")):
                    digests[str(file)] = _digest(file.read_bytes())
            except OSError:
                return None
        svc_own = os.path.join(svc_package().directory, "")
        reads_command = any(scan.may_read_command for module, (_, _, scan) in files_of.read.items()
                            if not module.startswith(svc_own))
        try:
            forma_text: str | None = files_of.read[str(self.forma)][0].decode("utf-8")
        except UnicodeDecodeError:
            forma_text = None
        others = {file: digest for file, digest in digests.items() if file != str(self.forma)}
        reusable = forma_text is not None and not files_of.imported(self.forma)
        evaluator_key = _digest(json.dumps(others, sort_keys=True).encode()) if reusable else None
        return Sources(digests, reads_command, forma_text, evaluator_key)

    def store(self, document: Mapping[str, Any], sources: Sources) -> None:
        """Keeps ``document`` (the forma JSON as Pkl rendered it, every descriptor in place), evaluated from
        ``sources`` (``sources()``), when it may be kept: for every command when no module may read it."""
        if _holds_a_secret(document):
            return
        path = self.path if sources.may_read_command else self.any_command_path
        try:
            entry = {"Format": _FORMAT, "Inputs": self._inputs(self._entries[path]), "Files": sources.digests,
                     "Document": document}
            text = jsontext.dumps(entry)  # orjson: a 100,000-resource document in a quarter of json's time
            if _OPAQUE in text:  # an Opaque envelope anywhere (or a string that reads like one)
                return
            write_private(path, text, keep=_KEPT)
        except (OSError, ValueError) as exc:  # a cache that cannot be written costs the next command time only
            _log.debug("evaluation of %s not kept in %s: %s", self.forma, path, exc)

    def store_meanwhile(self, document: Mapping[str, Any], sources: Sources) -> None:
        """``store`` on a thread of its own; ``document`` must not change while it runs."""
        written = threading.Thread(target=self._store_and_forget, args=(document, sources),
                                   name=f"svc keeps {self.path.name}")
        for path in self._entries:
            _writing[path] = written
        written.start()

    def _store_and_forget(self, document: Mapping[str, Any], sources: Sources) -> None:
        try:
            self.store(document, sources)
        except Exception:  # noqa: BLE001 - a cache that cannot be written costs the next command time only
            _log.debug("evaluation of %s not kept", self.forma, exc_info=True)
        finally:
            for path in self._entries:
                if _writing.get(path) is threading.current_thread():
                    del _writing[path]

    def _inputs(self, properties: Mapping[str, str]) -> list[Any]:
        """What the result depends on besides the files: the properties, svc, the Pkl binary, where the project
        file is (one added above the forma changes the packages it sees)."""
        pkl = find_pkl()
        binary = pkl.stat()
        return [properties, __version__, [str(pkl), binary.st_size, binary.st_mtime_ns],
                None if self._project_file is None else str(self._project_file)]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str:
    return _digest(path.read_bytes())


def _settled(path: Path) -> Path:
    """``path``, once the write of it this process may have under way has ended (the command before, in a CLI
    server: read unwritten, its kept evaluation was missed, or looked outdated and Pkl was started for nothing)."""
    writing = _writing.get(path)
    if writing is not None:
        writing.join()
    return path


def finish_writes() -> None:
    """Waits for the kept evaluations this process is still writing (at exit: a write cut short keeps nothing and
    leaves its temporary file behind)."""
    for written in list(_writing.values()):
        written.join()


atexit.register(finish_writes)


def _written(path: Path) -> int:
    try:
        return _settled(path).stat().st_mtime_ns
    except OSError:
        return -1


def _holds_a_secret(document: Mapping[str, Any]) -> bool:
    """A value where a resource's descriptor says a secret goes (an Opaque envelope is found in the text). A
    document not in a forma's shape is not kept either."""
    try:
        fields = [document_opaque_fields(raw) for raw in document.get(LISTED_SCHEMAS) or ()]
        found: list[Any] = []
        for resource in document["Resources"]:
            opaque = fields[resource["SchemaIndex"]]
            if opaque.holds_secret:  # most descriptors have no secret field: nothing to walk
                conceal_secrets(resource.get("Properties") or {}, opaque, found.append)
                if found:
                    return True
    except (LookupError, TypeError, AttributeError):
        return True
    return False
