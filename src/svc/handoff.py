"""The hand-off between the ``svc`` console script (``svc.launcher``) and the warm CLI server (``svc.cli.server``):
where the server's socket lives, which server fits a command, and the server's answers.

Imported by every command before anything else, so only what the interpreter has loaded already and C modules.
"""

from __future__ import annotations

import _socket
import os
import stat
import sys
import zlib

PROTOCOL = 1
# The server's answers: 8 bytes each, a kind then a value, both signed big-endian 32-bit integers.
STARTED = 1  # the worker's process id (and process group)
EXITED = 2  # its exit code, or minus the signal that ended it
REFUSED = 3  # run it yourself: the server's code changed on disk since it started, or it is another installation's
RECORD = 8
MAX_REQUEST = 16 * 1024 * 1024  # a command's request (its arguments and environment), at most


def record(kind: int, value: int) -> bytes:
    return kind.to_bytes(4, "big", signed=True) + value.to_bytes(4, "big", signed=True)


def read_record(connection: _socket.socket) -> tuple[int, int]:
    data = b""
    while len(data) < RECORD:
        chunk = connection.recv(RECORD - len(data))
        if not chunk:
            raise ValueError("the server closed the connection")
        data += chunk
    return int.from_bytes(data[:4], "big", signed=True), int.from_bytes(data[4:], "big", signed=True)


def rest_of_message(connection: _socket.socket, data: bytes, after: int = 0) -> bytes:
    """A message (its size in 4 bytes, then itself) begun by ``data``, read to its end and ``after`` bytes beyond."""
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 or size > MAX_REQUEST:
        raise ValueError("a malformed request")
    while len(data) < 4 + size + after:
        chunk = connection.recv(4 + size + after - len(data))
        if not chunk:
            raise EOFError("the other end left mid-request")
        data += chunk
    return data[4:4 + size + after]


def identity() -> str:
    """What a server must share with this command to run it: the interpreter, its import path and flags."""
    return repr((PROTOCOL, sys.version, sys.executable, sys.path[1:], sys.flags, sys.warnoptions, sys._xoptions))


def runtime_dir() -> str | None:
    """The user's private directory for the server's socket: ``$XDG_RUNTIME_DIR/svc``, else ``svc-UID`` in the
    temporary directory; None when it is not a directory of this user's that only they can enter."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    path = os.path.join(base, "svc") if base else os.path.join(os.environ.get("TMPDIR") or "/tmp", f"svc-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        return None
    return path


def server_base(directory: str, key: str) -> str:
    """The path, less its suffix, of the socket (``.sock``), lock (``.lock``), log (``.log``) and failure marker
    (``.failed``) of the server for ``key``."""
    return os.path.join(directory, f"cli-{zlib.crc32(key.encode()):08x}")
