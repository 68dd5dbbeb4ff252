"""The descriptors of resource classes from svc's Pkl packages, kept from one forma evaluation to the next.

Deriving a class's descriptor (``svc.schemaOf``: its fields and hints, its secrets' paths, through every
sub-resource) is most of what a forma of many types costs: 40 AWS registry types took three times as long as 3.
A class declared in a package that svc supplies (a plugin's schema package, ``@svc``) changes only when the files
it is read from do, so its descriptor is kept here once derived, with the size and modification time of its
module and of every module that module imports, transitively (the Pkl binary's too). The next evaluation is told
which classes it need not derive (``prop:$cachedClasses``). A class declared anywhere else (in the forma, in a
project's helper modules) is derived every time: nothing here is keyed by what the user is editing.

One file per svc version in the schema cache directory (``svc.paths.schema_cache_dir``), replaced
whole; a file that cannot be read is as good as none.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc import __version__, jsontext
from svc.forma.module_files import ModuleFiles, Package, packages_of
from svc.paths import replace_file, schema_cache_dir
from svc.pkl import find_pkl

CACHED_CLASSES = "$cachedClasses"  # the prop: that names the classes not to derive, one per line
_FORMAT = 1
_log = logging.getLogger(__name__)

_Stat = tuple[int, int]  # size, modification time (ns)


@dataclass
class DescriptorCache:
    """The kept descriptors (raw JSON text by ``<module file>#<class>``) and the files each was read from."""

    path: Path
    packages: dict[str, Package]
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: bool = False
    _stats: dict[str, _Stat | None] = field(default_factory=dict)
    _modules: ModuleFiles | None = None  # each module's own imports, read once

    @classmethod
    def open(cls, project: Mapping[str, Any], directory: Path | None = None) -> DescriptorCache:
        path = (directory or schema_cache_dir()) / f"classes-svc-{__version__}.v{_FORMAT}.json"
        return cls(path, packages_of(project), jsontext.read_table(path, _FORMAT, "Classes"))

    # -- keys: Pkl knows a class by its module's URI, the cache by its module's file ----------------------------
    def _file_of(self, key: str) -> str | None:
        """``<module URI>#<class>`` as ``<module file>#<class>``, for a module of one of the packages."""
        module, _, name = key.rpartition("#")
        for package in self.packages.values():
            if module.startswith(package.uri_prefix):
                return f"{package.directory / module.removeprefix(package.uri_prefix)}#{name}"
        return None

    def _key_of(self, entry: str) -> str | None:
        """``<module file>#<class>`` as the ``<module URI>#<class>`` Pkl knows it by, if a package holds it."""
        module, _, name = entry.rpartition("#")
        for package in self.packages.values():
            directory = os.path.join(package.directory, "")  # with its separator: /a/b holds /a/b/c, not /a/bc
            if module.startswith(directory):
                return f"{package.uri_prefix}{Path(module[len(directory):]).as_posix()}#{name}"
        return None

    # -- what the evaluation need not derive ------------------------------------------------------------------
    def offered(self) -> list[str]:
        """The classes whose kept descriptor is still what their files give, as Pkl names them."""
        fresh = []
        for entry, kept in list(self.entries.items()):
            key = self._key_of(entry)
            if key is not None and self._unchanged(kept["Files"]):
                fresh.append(key)
        return fresh

    def _stat(self, file: str) -> _Stat | None:
        if file not in self._stats:
            try:
                info = os.stat(file)
                self._stats[file] = (info.st_size, info.st_mtime_ns)
            except OSError:
                self._stats[file] = None
        return self._stats[file]

    def _unchanged(self, files: Mapping[str, list[int]]) -> bool:
        return all(self._stat(file) == tuple(recorded) for file, recorded in files.items())

    def schema(self, key: str) -> str:
        """The kept descriptor (JSON text) of a class :meth:`offered` named."""
        entry = self._file_of(key)
        if entry is None or entry not in self.entries:
            raise KeyError(key)
        return self.entries[entry]["Schema"]

    # -- keeping what an evaluation derived -------------------------------------------------------------------
    def keep(self, key: str, schema: Any) -> None:
        """Keeps a class's descriptor as Pkl rendered it, when the class is a package's and its files are known."""
        entry = self._file_of(key)
        if entry is None:
            return
        if self._modules is None:
            self._modules = ModuleFiles(self.packages)
        files = self._modules.closure(Path(entry.rpartition("#")[0]))
        if files is None:
            return
        stats = {file: self._stat(file) for file in [*files, str(find_pkl())]}
        if any(stat is None for stat in stats.values()):
            return
        self.entries[entry] = {"Files": stats, "Schema": jsontext.dumps(schema)}
        self.changed = True

    def save(self) -> None:
        """Writes the kept descriptors if this evaluation added any (atomically: a reader sees one file whole)."""
        if not self.changed:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, jsontext.dumps({"Format": _FORMAT, "Classes": self.entries}))
        except OSError as exc:  # a cache that cannot be written costs the next evaluation time, nothing else
            _log.debug("descriptor cache not written to %s: %s", self.path, exc)
        self.changed = False
