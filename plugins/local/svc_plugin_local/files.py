"""The file system side of LOCAL: atomic writes, modes, and what a file or directory looks like when read."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from svc.plugins.sdk import ErrorCode, Json, PluginError


def _current_umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before any thread of the plugin runs.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _current_umask()
DEFAULT_FILE_MODE = 0o666 & ~UMASK


def parse_mode(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) != 4 or value[0] != "0" or any(c not in "01234567" for c in value):
        raise PluginError(ErrorCode.INVALID_REQUEST, f"Mode {value!r} must be four octal digits, e.g. \"0644\"")
    return int(value, 8)


def format_mode(mode: int) -> str:
    return f"{stat.S_IMODE(mode):04o}"


def make_parents(root: Path, path: Path) -> None:
    """Creates the missing directories between the root and ``path`` (the root too)."""
    if os.path.isdir(path.parent):  # most files go where others already went: one stat
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.parent.is_dir():
        raise PluginError(ErrorCode.INVALID_REQUEST, f"{path.parent} is not a directory")


def write_file(path: Path, content: str, mode: int | None) -> int:
    """Replaces the file's content in one step: a reader (or a crash) sees the old file or the new one. Returns
    the mode the file has now (``mode``, else the old file's, else the default)."""
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = DEFAULT_FILE_MODE
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".svc-tmp")
    try:
        try:
            data = memoryview(content.encode("utf-8"))
            while data:  # a file object would cost more than the write for a short content
                data = data[os.write(handle, data):]
            os.fchmod(handle, mode)
        finally:
            os.close(handle)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return mode


def file_properties(native_id: str, content: str, mode: int) -> Json:
    return {"Path": native_id, "Content": content, "Mode": format_mode(mode)}


def read_file(native_id: str, path: Path) -> Json | None:
    """``{Path, Content, Mode}``, or None when there is no regular file there."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return None
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    # Text is the contract; bytes that are not UTF-8 show as U+FFFD rather than failing the read.
    return file_properties(native_id, data.decode("utf-8", errors="replace"), info.st_mode)


def read_directory(native_id: str, path: Path) -> Json | None:
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    return {"Path": native_id, "Mode": format_mode(info.st_mode)}


def remove_directory(path: Path) -> None:
    try:
        path.rmdir()
    except FileNotFoundError:
        return
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
            # Recoverable: its files are usually being deleted by the same command right now.
            raise PluginError(ErrorCode.RESOURCE_CONFLICT, f"directory {path} is not empty; svc deletes only "
                                                           "empty directories") from error
        raise
