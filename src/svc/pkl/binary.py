"""Locating the native Pkl binary, checking that it is recent enough, and how svc runs it.

Its version is what ``pkl --version`` prints, kept in the user's cache directory (``$XDG_CACHE_HOME/svc/
pkl-versions.json``) by the binary's resolved path, size, modification time and inode: running it cost every
command that evaluates Pkl about 8 ms. A binary replaced in any way (a new install, an upgrade, a symlink pointed
elsewhere) is run again; an unreadable or unwritable cache only means running it.

svc runs Pkl without its JIT compiler (``interpreter_only``). Pkl's native image evaluates in one isolate and
compiles hot code in a second one, each reserving a 32 GiB range of address space; started under an address-space
limit (``RLIMIT_AS``, ``address_space_limiter``) with room for the first only, it evaluates with its interpreter
alone. Nothing else lets a user of the native binary turn the compiler off: it takes no runtime option. A forma is
evaluated once, mostly building objects, and on a machine of two CPUs the compiler's threads cost more than they
gained: they took a CPU from the CLI, the agent and its plugins while a small command ran, and doubled the Pkl
server's CPU on a large forma for no shorter evaluation (docs/performance.md, "Pkl without its compiler"). The
version check runs the binary under that limit too, and a binary that does not start under it (a Pkl on the JVM,
another build) is run as it is. ``SVC_PKL_JIT=on`` keeps the compiler, for formas that compute a lot.
"""

from __future__ import annotations

import functools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from svc.paths import cache_home, write_private

MINIMUM_VERSION = (0, 30, 0)
_INSTALL_HINT = (
    "install it with scripts/install.sh (it places the pinned Pkl 0.30.2 next to the virtualenv's python), "
    "or point $SVC_PKL at a pkl binary"
)


# Room for the evaluating isolate's range and what Pkl maps beside it (~1.6 GiB), not for the compiler's.
INTERPRETER_ONLY_ADDRESS_SPACE = 64 << 30
JIT_VARIABLE = "SVC_PKL_JIT"


class PklBinaryError(RuntimeError):
    """The Pkl binary is missing, does not run, or is too old."""


class _Facts(NamedTuple):
    version: tuple[int, ...]
    starts_limited: bool  # whether it starts under ``address_space_limiter``'s limit


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
    return _facts(binary).version


def _facts(binary: Path) -> _Facts:
    """The binary's version and whether it starts limited, from the cache while the file is the one they were
    taken from."""
    try:
        key, stamp = _identity(binary)
    except OSError:
        return _run_version(binary)  # it does not run either: let that say why
    kept = _kept()
    entry = kept.get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("startsLimited"), bool):
        try:
            return _Facts(tuple(int(part) for part in entry["version"]), entry["startsLimited"])
        except (KeyError, TypeError, ValueError):
            pass  # not what this svc writes: ask the binary
    facts = _run_version(binary)
    _keep(kept, key, stamp, facts)
    return facts


def _kept() -> dict[str, object]:
    """The cache's entries; none when it is missing or unreadable."""
    try:
        kept = json.loads(_versions_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _keep(kept: dict[str, object], key: str, stamp: list[int], facts: _Facts) -> None:
    """Writes the cache with ``key``'s entry last (newest); quietly nothing when it cannot be written."""
    kept.pop(key, None)
    kept[key] = {"stamp": stamp, "version": list(facts.version), "startsLimited": facts.starts_limited}
    entries = dict(list(kept.items())[-_KEPT_VERSIONS:])
    try:
        write_private(_versions_file(), json.dumps(entries))  # whole or not at all, with commands side by side
    except OSError:
        pass


def _run_version(binary: Path) -> _Facts:
    """``pkl --version`` under the address-space limit, and as it is when it does not start so."""
    limits = _limits()
    starts_limited = True
    try:
        try:
            out = _print_version(binary, limits)
        except subprocess.CalledProcessError:
            starts_limited = False
            out = _print_version(binary, None)
    except (OSError, subprocess.SubprocessError) as exc:
        raise PklBinaryError(f"cannot run the Pkl binary {binary}: {exc}; {_INSTALL_HINT}") from exc
    match = re.search(r"Pkl (\d+)\.(\d+)\.(\d+)", out)
    if not match:
        raise PklBinaryError(f"{binary} does not look like Pkl (it printed {out.strip()!r}); {_INSTALL_HINT}")
    return _Facts(tuple(int(part) for part in match.groups()), starts_limited)


def _print_version(binary: Path, limits: tuple[int, int] | None) -> str:
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30, check=True,
                          preexec_fn=None if limits is None else functools.partial(_set_limits, limits)).stdout


def interpreter_only(binary: Path) -> bool:
    """Whether svc runs ``binary`` without its JIT compiler (under ``address_space_limiter``): unless
    ``$SVC_PKL_JIT`` is on or the binary does not start so."""
    if os.environ.get(JIT_VARIABLE, "").lower() in ("on", "1", "true", "yes"):
        return False
    return _facts(binary).starts_limited


def address_space_limiter() -> Callable[[], None]:
    """What a child about to run Pkl calls (``preexec_fn``) to be limited: worked out here, in the parent, so that
    the child only makes the system call. A lower limit already in place stays."""
    return functools.partial(_set_limits, _limits())


def _limits() -> tuple[int, int]:
    """The (soft, hard) limits Pkl runs under: ``INTERPRETER_ONLY_ADDRESS_SPACE``, or a lower one already set."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    return min(limit for limit in (INTERPRETER_ONLY_ADDRESS_SPACE, soft, hard) if limit != resource.RLIM_INFINITY), hard


def _set_limits(limits: tuple[int, int]) -> None:
    resource.setrlimit(resource.RLIMIT_AS, limits)


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
