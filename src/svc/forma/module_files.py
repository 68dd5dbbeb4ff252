"""The files a Pkl module is made of: the module and every module it imports, transitively, found by reading
their text (no Pkl runs). What the caches of evaluations watch (``descriptor_cache``, ``evaluation_cache``).

Imports are read from ``import``, ``import*``, ``amends`` and ``extends`` clauses at the start of a line and from
``import("…")`` expressions, and resolved as Pkl would: next to the importing file, or in one of the evaluation's
local packages (``@name/…``); ``pkl:`` modules are part of the Pkl binary. Anything else (another URI scheme, a
glob, a package this evaluation does not have) cannot be followed, and the walk says so (None). Matching more than
Pkl would (an import in a string) only adds files to watch.

``ModuleFiles(packages, strict=True)`` also refuses a module whose value may depend on more than its files: one
that reads a resource other than a ``prop:`` (``read("env:…")``, ``read("file:…")``, any other scheme, a
computed URI), one with a glob import (what it finds may change without any file read here changing), and one
with an import this reading cannot be sure of (not at the start of a line, in a raw or escaped string). The check
is on the text, whole-line comments left out, and errs on the side of refusing: a comment after code that reads
like one of those is enough. What a module's text says is kept by its digest (``svc.forma.module_scans``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from svc.forma.module_scans import ModuleScan, ModuleScans

_URI_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Package:
    """A local package of the evaluation: how its modules' URIs start, and its directory."""

    uri_prefix: str
    directory: Path


def packages_of(project: Mapping[str, Any]) -> dict[str, Package]:
    """The local packages an evaluator's ``project`` declares (and their own dependencies), by name."""
    found: dict[str, Package] = {}

    def walk(dependencies: Mapping[str, Any]) -> None:
        for name, dependency in dependencies.items():
            if dependency.get("type") != "local":
                continue
            directory = Path(unquote(urlparse(dependency["projectFileUri"]).path)).parent
            found.setdefault(name, Package(f"project{dependency['packageUri']}#/", directory))
            walk(dependency.get("dependencies") or {})

    walk(project.get("dependencies") or {})
    return found


class ModuleFiles:
    """Follows modules' imports within ``packages`` (by name), each module's text read once and scanned unless
    ``scans`` holds its scan; ``read`` holds what was read of each module, by path: its text, digest and scan.
    Paths are strings inside (a ``Path`` costs ~10 µs to make, and a forma of 40 AWS types has ~130 imports)."""

    def __init__(self, packages: Mapping[str, Package], *, strict: bool = False,
                 scans: ModuleScans | None = None) -> None:
        self.packages = {name: str(package.directory) for name, package in packages.items()}
        self._strict = strict
        self._scans = scans or ModuleScans()
        self._reads: dict[str, list[str] | None] = {}
        self._root = ""
        self.read: dict[str, tuple[bytes, str, ModuleScan]] = {}

    def closure(self, module: Path) -> list[str] | None:
        """The paths of the module and of every module it reads, transitively (sorted); None when one of them cannot
        be followed. The scan of ``module`` itself is not kept (the one being edited)."""
        self._root = str(module)
        seen: set[str] = set()
        pending = [str(module)]
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            reads = self._reads_of(current)
            if reads is None:
                return None
            pending.extend(reads)
        return sorted(seen)

    def imported(self, module: Path) -> bool:
        """Whether a module followed so far imports ``module``."""
        return any(str(module) in reads for reads in self._reads.values() if reads)

    def _reads_of(self, module: str) -> list[str] | None:
        if module not in self._reads:
            try:
                with open(module, "rb") as file:
                    data = file.read()
            except OSError:
                self._reads[module] = None
            else:
                digest, found = self._scans.of(data, keep=module != self._root)
                self.read[module] = (data, digest, found)
                self._reads[module] = self._followed(module, found)
        return self._reads[module]

    def _followed(self, module: str, found: ModuleScan) -> list[str] | None:
        if self._strict and not found.files_alone:
            return None
        directory = os.path.dirname(module)
        resolved = [self._resolve(directory, target) for target in found.imports]
        return None if None in resolved else [path for paths in resolved if paths for path in paths]

    def _resolve(self, directory: str, target: str) -> list[str] | None:
        if target.startswith("pkl:"):
            return []  # the standard library: part of the Pkl binary, which callers watch apart
        if any(glob in target for glob in "*{[?"):
            return None
        if target.startswith("@"):
            name, _, rest = target[1:].partition("/")
            package = self.packages.get(name)
            return None if package is None else [os.path.normpath(os.path.join(package, rest))]
        if _URI_SCHEME.match(target):
            return None
        return [os.path.normpath(os.path.join(directory, target))]
