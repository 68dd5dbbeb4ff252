"""Locating the native Pkl binary and checking that it is recent enough."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

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


def _version_of(binary: Path) -> tuple[int, ...]:
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
