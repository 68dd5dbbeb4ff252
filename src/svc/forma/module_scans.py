"""What svc reads in a Pkl module's text, kept by the text's SHA-256 from one command to the next.

The caches of evaluations (``svc.forma.module_files``, ``svc.forma.evaluation_cache``) read every module a forma is
made of each time they evaluate it, and scanning the texts was most of that work: 10.7 ms for a forma of 40 AWS
types, of which reading and hashing its 44 files took 0.9. What a scan finds (the module's imports, whether its
value depends on its files alone, whether it may read the command) is a function of the text alone, so it is kept
by the text's digest in ``$XDG_CACHE_HOME/svc/module-scans.json`` (the latest ``MAX_KEPT``, mode 0600): an edited
module has another digest and is scanned again. Anything unreadable there counts as nothing kept.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc import jsontext
from svc.paths import cache_home, write_private
from svc.pkl_source import IMPORT_KEYWORD, PROP_READ, READ, may_read_command, without_line_comments

MAX_KEPT = 4096
_FORMAT = 1
_CLAUSE = re.compile(r'^\s*(?:import\*?|amends|extends)\s+"([^"]*)"', re.MULTILINE)
_EXPRESSION = re.compile(r'import(?<!\wimport)\*?\(\s*"([^"]*)"\s*\)')  # \bimport…, as in svc.pkl_source
_GLOB = re.compile(r"import(?<!\wimport)\*")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModuleScan:
    """What a module's text says: the URIs it imports (as written), whether its value depends on its files alone
    (it reads no resource but a ``prop:``, has no glob import, and every import was found), and whether it may read
    the command it is evaluated for (``svc.pkl_source.may_read_command``)."""

    imports: tuple[str, ...]
    files_alone: bool
    may_read_command: bool


def scan(text: str) -> ModuleScan:
    imports = tuple(_imports(text))
    code = without_line_comments(text)
    files_alone = (not _GLOB.search(code) and len(IMPORT_KEYWORD.findall(code)) == len(imports)
                   and len(READ.findall(code)) == len(PROP_READ.findall(code)))
    return ModuleScan(imports, files_alone, may_read_command(code, comments_removed=True))


def _imports(text: str) -> Iterable[str]:
    yield from (match.group(1) for match in _CLAUSE.finditer(text))
    yield from (match.group(1) for match in _EXPRESSION.finditer(text))


class ModuleScans:
    """Scans by digest: those kept at ``path`` (None: none, and nothing is written), and those made since."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._kept: dict[str, Any] = jsontext.read_table(path, _FORMAT, "Scans") if path is not None else {}
        self._added = False

    @classmethod
    def kept(cls) -> ModuleScans:
        """The scans kept in the user's cache directory."""
        return cls(cache_home() / "module-scans.json")

    def of(self, data: bytes, *, keep: bool = True) -> tuple[str, ModuleScan]:
        """The SHA-256 of a module's text ``data`` and its scan; a new scan is kept unless ``keep`` is false (a forma
        being edited: a scan of each of its versions would be written, and almost never read)."""
        digest = hashlib.sha256(data).hexdigest()
        kept = self._kept.get(digest)
        if isinstance(kept, list) and len(kept) == 3:
            imports, files_alone, reads_command = kept
            if (isinstance(imports, list) and all(isinstance(target, str) for target in imports)
                    and isinstance(files_alone, bool) and isinstance(reads_command, bool)):
                return digest, ModuleScan(tuple(imports), files_alone, reads_command)
        found = scan(data.decode("utf-8", "replace"))
        if keep:
            self._kept[digest] = [list(found.imports), found.files_alone, found.may_read_command]
            self._added = True
        return digest, found

    def save(self) -> None:
        """Writes the scans if any was added, the latest ``MAX_KEPT``."""
        if not self._added or self.path is None:
            return
        kept = dict(list(self._kept.items())[-MAX_KEPT:])
        try:
            write_private(self.path, jsontext.dumps({"Format": _FORMAT, "Scans": kept}))
        except OSError as exc:  # a scan not kept costs the next command a scan, nothing else
            _log.debug("module scans not written to %s: %s", self.path, exc)
        self._added = False
