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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from svc import __version__, jsontext
from svc.forma.module_files import ModuleFiles, packages_of
from svc.model.forma import Forma
from svc.model.opaque import opaque_fields
from svc.model.values import conceal_secrets
from svc.paths import cache_home, write_private
from svc.pkl import find_pkl
from svc.pkl.projects import find_project_file

_FORMAT = 1
_KEPT = 16
_OPAQUE = '"$visibility":"Opaque"'
_log = logging.getLogger(__name__)


def cache_enabled() -> bool:
    return os.environ.get("SVC_EVALUATION_CACHE", "").lower() not in ("off", "0", "false", "no")


class EvaluationCache:
    """The kept evaluation of one forma with one set of property values."""

    def __init__(self, forma: Path, properties: Mapping[str, str], directory: Path | None = None) -> None:
        self.forma = forma.resolve()
        self._properties = dict(sorted(properties.items()))
        self._project_file = find_project_file(self.forma.parent)
        key = json.dumps([str(self.forma), self._properties], separators=(",", ":"))
        self.path = (directory or cache_home() / "formas") / f"{_digest(key.encode())[:32]}.json"

    def lookup(self) -> dict[str, Any] | None:
        """The kept document, if everything it came from is as it was; else None."""
        try:
            entry = json.loads(self.path.read_bytes())
            if entry.get("Format") != _FORMAT or entry.get("Inputs") != self._inputs():
                return None
            for file, digest in entry["Files"].items():
                if _file_digest(Path(file)) != digest:
                    return None
            document = entry["Document"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return document if isinstance(document, dict) else None

    def store(self, document: Mapping[str, Any], forma: Forma, project: Mapping[str, Any]) -> None:
        """Keeps ``document`` (every resource class's descriptor in place; ``forma``, what it validated as) when it
        may be kept; ``project``: the evaluation's project, whose local packages the forma imports from."""
        files = ModuleFiles(packages_of(project), strict=True).closure(self.forma)
        if files is None or _holds_a_secret(forma):
            return
        if self._project_file is not None:
            files += [self._project_file, self._project_file.with_name("PklProject.deps.json")]
        try:
            entry = {"Format": _FORMAT, "Inputs": self._inputs(),
                     "Files": {str(file): _file_digest(file) for file in files}, "Document": document}
            text = jsontext.dumps(entry)  # orjson: a 100,000-resource document in a quarter of json's time
            if _OPAQUE in text:  # an Opaque envelope anywhere (or a string that reads like one)
                return
            write_private(self.path, text, keep=_KEPT)
        except (OSError, ValueError) as exc:  # a cache that cannot be written costs the next command time only
            _log.debug("evaluation of %s not kept in %s: %s", self.forma, self.path, exc)

    def _inputs(self) -> list[Any]:
        """What the result depends on besides the files: the properties, svc, the Pkl binary, where the project
        file is (one added above the forma changes the packages it sees)."""
        pkl = find_pkl()
        binary = pkl.stat()
        return [self._properties, __version__, [str(pkl), binary.st_size, binary.st_mtime_ns],
                None if self._project_file is None else str(self._project_file)]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str:
    return _digest(path.read_bytes())


def _holds_a_secret(forma: Forma) -> bool:
    """A value where a resource's descriptor says a secret goes."""
    found: list[Any] = []
    for resource in forma.resources:
        conceal_secrets(resource.properties, opaque_fields(resource.schema_), found.append)
        if found:
            return True
    return False
