"""Locating the native Pkl binary and checking that it is recent enough.

Its version is what ``pkl --version`` prints, kept in the user's cache directory (``$XDG_CACHE_HOME/svc/
pkl-versions.json``) by the binary's resolved path, size, modification time and inode: running it cost every
command that evaluates Pkl about 8 ms. A binary replaced in any way (a new install, an upgrade, a symlink pointed
elsewhere) is run again; an unreadable or unwritable cache only means running it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from svc.paths import cache_home, write_private

MINIMUM_VERSION = (0, 30, 0)
_INSTALL_HINT = (
    "install it with scripts/install.sh (it places the pinned Pkl 0.30.2 next to the virtualenv's python), "
    "or point $SVC_PKL at a pkl binary"
)


class PklBinaryError(RuntimeError):
    """The Pkl binary is missing, does not run, or is too old."""


def _candidates() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if env := os.environ.get("SVC_PKL"):
        found.append(("$SVC_PKL", Path(env)))
    found.append(("the python interpreter's directory", Path(sys.executable).parent / "pkl"))
    if on_path := shutil.which("pkl"):
        found.append(("PATH", Path(on_path)))
    return found


_KEPT_VERSIONS = 8  # binaries remembered; the least recently checked go first


def _versions_file() -> Path:
    return cache_home() / "pkl-versions.json"


def _identity(binary: Path) -> tuple[str, list[int]]:
    """The key and stamp under which ``binary``'s version is kept: what changes when the file is replaced."""
    resolved = binary.resolve()
    found = resolved.stat()
    return str(resolved), [found.st_size, found.st_mtime_ns, found.st_ino, found.st_dev]


def _version_of(binary: Path) -> tuple[int, ...]:
    """The binary's version, from the cache while the file is the one it was taken from."""
    try:
        key, stamp = _identity(binary)
    except OSError:
        return _run_version(binary)  # it does not run either: let that say why
    kept = _kept()
    entry = kept.get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp:
        try:
            return tuple(int(part) for part in entry["version"])
        except (KeyError, TypeError, ValueError):
            pass  # not what this svc writes: ask the binary
    version = _run_version(binary)
    _keep(kept, key, stamp, version)
    return version


def _kept() -> dict[str, object]:
    """The cache's entries; none when it is missing or unreadable."""
    try:
        kept = json.loads(_versions_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _keep(kept: dict[str, object], key: str, stamp: list[int], version: tuple[int, ...]) -> None:
    """Writes the cache with ``key``'s entry last (newest); quietly nothing when it cannot be written."""
    kept.pop(key, None)
    kept[key] = {"stamp": stamp, "version": list(version)}
    entries = dict(list(kept.items())[-_KEPT_VERSIONS:])
    try:
        write_private(_versions_file(), json.dumps(entries))  # whole or not at all, with commands side by side
    except OSError:
        pass


def _run_version(binary: Path) -> tuple[int, ...]:
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise PklBinaryError(f"cannot run the Pkl binary {binary}: {exc}; {_INSTALL_HINT}") from exc
    match = re.search(r"Pkl (\d+)\.(\d+)\.(\d+)", out.stdout)
    if not match:
        raise PklBinaryError(f"{binary} does not look like Pkl (it printed {out.stdout.strip()!r}); {_INSTALL_HINT}")
    return tuple(int(part) for part in match.groups())


@functools.cache
def find_pkl() -> Path:
    """The Pkl binary: ``$SVC_PKL``, then next to the Python interpreter, then ``PATH``."""
    for source, path in _candidates():
        if source == "$SVC_PKL" and not path.is_file():
            raise PklBinaryError(f"$SVC_PKL is {path}, which does not exist; {_INSTALL_HINT}")
        if path.is_file() and os.access(path, os.X_OK):
            version = _version_of(path)
            if version < MINIMUM_VERSION:
                wanted = ".".join(map(str, MINIMUM_VERSION))
                have = ".".join(map(str, version))
                raise PklBinaryError(f"Pkl {have} at {path} (from {source}) is too old, svc needs {wanted} or newer; "
                                     f"{_INSTALL_HINT}")
            return path
    raise PklBinaryError(f"the Pkl binary was not found ($SVC_PKL, next to {sys.executable}, PATH); {_INSTALL_HINT}")
