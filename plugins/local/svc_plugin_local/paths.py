"""Where a resource lives: a target's root, and a relative path that may never leave it.

Every path the plugin touches goes through ``inside``: a canonical relative path (no empty, ``.`` or ``..``
segments), joined to the root, whose real location (symbolic links resolved) is still under the root's real
location. A link that points outside is refused, whatever the path looks like.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from svc.plugins.sdk import ErrorCode, Json, PluginError


@dataclass(frozen=True)
class Place:
    """A checked location: ``native_id`` is the canonical relative path, ``path`` the absolute one."""

    root: Path
    native_id: str
    path: Path


def root_of(target: Json) -> Path:
    """The target's root directory (``~`` expanded); it must be absolute."""
    raw = target.get("Root")
    if not isinstance(raw, str) or not raw.strip():
        raise PluginError(ErrorCode.INVALID_REQUEST, "the LOCAL target config has no Root")
    return _root(raw)


@functools.lru_cache(maxsize=64)  # every call names its target's root: the same few strings
def _root(raw: str) -> Path:
    root = Path(os.path.expanduser(raw))
    if not root.is_absolute():
        raise PluginError(ErrorCode.INVALID_REQUEST, f"the LOCAL target root {raw!r} must be an absolute path "
                                                     "(or start with ~/)")
    return root


def canonical(relative: object) -> str:
    """The canonical form of a relative path, or ``InvalidRequest`` naming what is wrong with it."""
    if not isinstance(relative, str) or not relative:
        raise PluginError(ErrorCode.INVALID_REQUEST, "Path is required (a path relative to the target's root)")
    if "\x00" in relative:
        raise PluginError(ErrorCode.INVALID_REQUEST, "Path may not contain a NUL character")
    if relative.startswith("/"):
        raise PluginError(ErrorCode.INVALID_REQUEST, f"Path {relative!r} must be relative to the target's root")
    segments = relative.split("/")
    if ".." in segments:
        raise PluginError(ErrorCode.INVALID_REQUEST, f"Path {relative!r} may not contain '..': it would leave "
                                                     "the target's root")
    if any(segment in ("", ".") for segment in segments):
        raise PluginError(ErrorCode.INVALID_REQUEST, f"Path {relative!r} is not canonical (no empty or '.' "
                                                     "segments, no trailing '/')")
    return relative


def inside(root: Path, relative: object) -> Place:
    """The checked place of ``relative`` under ``root``."""
    native_id = canonical(relative)
    segments = native_id.split("/")
    path = root.joinpath(*segments)
    if not _link_below(str(root), segments):
        # No symbolic link between the root and the path: its real location is the root's, plus the segments.
        return Place(root, native_id, path)
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)  # resolves every symbolic link that exists along the way
    if os.path.commonpath([real_root, real]) != real_root:
        raise PluginError(ErrorCode.INVALID_REQUEST, f"Path {native_id!r} leads out of the target's root "
                                                     f"{root} through a symbolic link")
    return Place(root, native_id, path)


def _link_below(root: str, segments: list[str]) -> bool:
    """Whether a segment of the path below the root is (or may be) a symbolic link: one ``lstat`` a segment,
    instead of resolving every directory from ``/`` down twice as ``realpath`` of the path and of the root do."""
    current = root
    for segment in segments:
        current = f"{current}/{segment}"
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return True
        except (FileNotFoundError, NotADirectoryError):
            return False  # nothing exists below here, so no link either
        except OSError:
            return True  # unreadable: the full resolution decides
    return False


def relative_to(root: Path, path: Path) -> str:
    return "/".join(path.relative_to(root).parts)
