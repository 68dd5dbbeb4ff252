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

PROTOCOL = 2
# The server's answers: 8 bytes each, a kind then a value, both signed big-endian 32-bit integers.
STARTED = 1  # the worker's process id (and process group)
EXITED = 2  # its exit code, or minus the signal that ended it
REFUSED = 3  # run it yourself: the server's code changed on disk since it started, or it is another installation's
RECORD = 8
MAX_REQUEST = 16 * 1024 * 1024  # a command's request (its arguments and environment), at most


# A command's request is bytes a launcher that is not Python can write (``native/launcher.c``): fields each ended by a
# NUL, which none can hold: the server's key, the working directory, the umask in octal, the standard streams'
# encodings ("encoding:errors" for stdin, stdout and stderr, comma-separated; empty when the launcher cannot tell,
# and the worker then works them out as Python would), the number of arguments, the arguments, and the environment's
# NAME=value entries. Arguments and environment are the bytes the kernel gave the launcher.
Request = tuple[str, list[str], dict[str, str], str, int, list[tuple[str, str]] | None]


def encode_request(key: str, args: list[bytes], environ: dict[bytes, bytes], cwd: bytes, umask: int,
                   streams: list[tuple[str, str]]) -> bytes:
    encodings = ",".join(f"{encoding}:{errors}" for encoding, errors in streams)
    entries = [name + b"=" + value for name, value in environ.items()]
    return b"\0".join([os.fsencode(key), cwd, b"%o" % umask, encodings.encode(), b"%d" % len(args), *args, *entries,
                       b""])


def decode_request(data: bytes) -> Request:
    """(key, args, environment, working directory, umask, streams or None); ValueError if malformed."""
    fields = data.split(b"\0")
    if len(fields) < 6 or fields.pop():
        raise ValueError("a malformed request")
    key, cwd, umask, encodings, count = (os.fsdecode(field) for field in fields[:5])
    args = [os.fsdecode(arg) for arg in fields[5:5 + int(count)]]
    environ = {}
    for entry in fields[5 + len(args):]:
        name, equals, value = entry.partition(b"=")
        if not equals or not name:
            raise ValueError("a malformed environment entry")
        environ[os.fsdecode(name)] = os.fsdecode(value)
    streams = None
    if encodings:
        streams = [tuple(stream.split(":")) for stream in encodings.split(",")]
        if len(streams) != 3 or any(len(stream) != 2 for stream in streams):
            raise ValueError("malformed stream encodings")
    if len(args) != int(count) or not os.path.isabs(cwd):
        raise ValueError("a malformed request")
    return key, args, environ, cwd, int(umask, 8), streams  # type: ignore[return-value]


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
    """What a server must share with this command to run it: the interpreter, its import path and flags. Not
    whether Python writes bytecode: each worker follows its client's ``PYTHONDONTWRITEBYTECODE``."""
    flags = [(name, getattr(sys.flags, name)) for name in sys.flags.__match_args__ if name != "dont_write_bytecode"]
    return repr((PROTOCOL, sys.version, sys.executable, sys.path[1:], flags, sys.warnoptions, sys._xoptions))


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
