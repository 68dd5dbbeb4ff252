"""The LOCAL plugin: ``LOCAL::FS::File`` and ``LOCAL::FS::Directory`` under a target's root.

Native ids are the canonical relative paths. Every mutating call is idempotent by ``ctx.request_token``
(``svc.plugins.journal.Journal``): a repeated token gets the first call's answer, and ``status(token)`` tells the agent
whether a call it lost track of (a crash) happened. Writes replace files atomically, so a process killed
mid-write leaves the old content or the new one, never half of it. They are not synced to the disk before the
answer: a crash of the machine may lose the last writes, as it may lose the journal's last entries.

The operations are coroutines that do their file work on the plugin's event loop: handing each call to one of 32
worker threads and back (GIL hand-offs, futex wake-ups) cost the plugin process more CPU than a file create itself
(tens of microseconds on a tmpfs). A listing walks the whole tree, so it runs on a thread and holds no other call
up.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from svc.plugins.journal import Journal
from svc.plugins.sdk import Ctx, ErrorCode, Json, ListResult, Operation, PluginError, Progress, ReadResult, Status
from svc_plugin_local import files
from svc_plugin_local.paths import Place, inside, relative_to, root_of

FILE = "LOCAL::FS::File"
DIRECTORY = "LOCAL::FS::Directory"
_TYPES = (FILE, DIRECTORY)


class Plugin:
    def __init__(self) -> None:
        self.plugin_config: Json = {}
        self.journal = Journal("LOCAL")

    def configure(self, plugin_config: Json) -> None:
        self.plugin_config = plugin_config

    # -- helpers ------------------------------------------------------------------------------------------------

    @staticmethod
    def _kind(ctx: Ctx) -> str:
        if ctx.resource_type not in _TYPES:
            raise PluginError(ErrorCode.INVALID_REQUEST, f"LOCAL has no resource type {ctx.resource_type}; "
                                                         f"it has {', '.join(_TYPES)}")
        return ctx.resource_type

    @staticmethod
    def _read(kind: str, place: Place) -> Json | None:
        if kind == FILE:
            return files.read_file(place.native_id, place.path)
        return files.read_directory(place.native_id, place.path)

    def _replay(self, ctx: Ctx) -> tuple[Progress | None, bool]:
        """The first answer to this token if there was one; and whether an earlier call with it began."""
        if not ctx.request_token:
            return None, False
        entry = self.journal.get(ctx.request_token)
        if entry is None:
            return None, False
        if entry.get("state") == "done":
            return Progress.from_json(entry["result"]), True
        return None, True

    def _mutate(self, ctx: Ctx, op: Operation, native_id: str, act: Any) -> Progress:
        """Runs ``act(resuming)`` under the journal; a refusal (``PluginError``) is an answer, stored too."""
        replay, resuming = self._replay(ctx)
        if replay is not None:
            return replay
        token = ctx.request_token
        if token:
            self.journal.begin(token, str(op), native_id)
        try:
            progress = act(resuming)
        except PluginError as refusal:
            progress = Progress.failure(refusal.code, refusal.message, native_id=native_id, operation=op)
        progress.operation = op
        if token:
            progress.request_id = token
            self.journal.finish(token, str(op), native_id, progress.to_json())
        return progress

    # -- operations ---------------------------------------------------------------------------------------------

    async def create(self, ctx: Ctx, label: str, properties: Json) -> Progress:
        kind = self._kind(ctx)
        root = root_of(ctx.target)
        place = inside(root, properties.get("Path"))
        mode = files.parse_mode(properties.get("Mode"))
        content = properties.get("Content")
        if content is not None and not isinstance(content, str):
            raise PluginError(ErrorCode.INVALID_REQUEST, "Content must be a string")

        def act(resuming: bool) -> Progress:
            path = place.path
            exists = os.path.lexists(path)
            if kind == FILE:
                # A pending entry for this token means our own earlier attempt made the file: finish it.
                if exists and not resuming:
                    raise PluginError(ErrorCode.ALREADY_EXISTS, f"{place.native_id} already exists under {root}; "
                                                                "delete it or choose another path")
                files.make_parents(root, path)
                text = content or ""
                written = files.write_file(path, text, mode if mode is not None or exists else files.DEFAULT_FILE_MODE)
                # What was just written, as a read would show it (the text as given, the mode as set), without
                # reading it back.
                return Progress(Status.SUCCESS, native_id=place.native_id,
                                properties=files.file_properties(place.native_id, text, written))
            if exists and not path.is_dir():
                raise PluginError(ErrorCode.ALREADY_EXISTS, f"{place.native_id} exists under {root} and is not a "
                                                            "directory")
            path.mkdir(parents=True, exist_ok=True)  # an existing directory is taken over
            if mode is not None:
                os.chmod(path, mode)
            return Progress(Status.SUCCESS, native_id=place.native_id, properties=self._read(kind, place))

        return self._mutate(ctx, Operation.CREATE, place.native_id, act)

    async def read(self, ctx: Ctx, native_id: str, prior: Json | None) -> ReadResult:
        kind = self._kind(ctx)
        root = root_of(ctx.target)
        if not root.is_dir():
            return ReadResult(error_code=ErrorCode.NOT_FOUND, message=f"the root {root} does not exist")
        found = self._read(kind, inside(root, native_id))
        if found is None:
            return ReadResult(error_code=ErrorCode.NOT_FOUND, message=f"{native_id} does not exist under {root}")
        return ReadResult(properties=found)

    async def update(self, ctx: Ctx, native_id: str, prior: Json, desired: Json, patch: list[Json]) -> Progress:
        kind = self._kind(ctx)
        place = inside(root_of(ctx.target), native_id)
        touched = {_top(op.get("path", "")) for op in patch}
        if "Path" in touched:
            raise PluginError(ErrorCode.NOT_UPDATABLE, "Path is create-only: a new path is a new file")
        mode = files.parse_mode(desired.get("Mode"))
        content = desired.get("Content")
        if content is not None and not isinstance(content, str):
            raise PluginError(ErrorCode.INVALID_REQUEST, "Content must be a string")

        def act(resuming: bool) -> Progress:
            current = self._read(kind, place)
            if current is None:
                raise PluginError(ErrorCode.NOT_FOUND, f"{native_id} does not exist under {place.root}")
            if kind == FILE:
                wanted = content if content is not None else ("" if "Content" in touched else current["Content"])
                if wanted != current["Content"]:
                    files.write_file(place.path, wanted, mode)
                elif mode is not None:
                    os.chmod(place.path, mode)
            elif mode is not None:
                os.chmod(place.path, mode)
            return Progress(Status.SUCCESS, native_id=native_id, properties=self._read(kind, place))

        return self._mutate(ctx, Operation.UPDATE, native_id, act)

    async def delete(self, ctx: Ctx, native_id: str) -> Progress:
        kind = self._kind(ctx)
        place = inside(root_of(ctx.target), native_id)

        def act(resuming: bool) -> Progress:
            if kind == FILE:
                if place.path.is_dir() and not place.path.is_symlink():
                    raise PluginError(ErrorCode.INVALID_REQUEST, f"{native_id} is a directory, not a file")
                try:
                    place.path.unlink()
                except FileNotFoundError:
                    pass  # already gone: what a delete wants
            else:
                files.remove_directory(place.path)
            return Progress(Status.SUCCESS, native_id=native_id)

        return self._mutate(ctx, Operation.DELETE, native_id, act)

    async def status(self, ctx: Ctx, request_id: str, native_id: str) -> Progress:
        entry = self.journal.get(request_id)
        if entry is None or entry.get("state") != "done":
            raise PluginError(ErrorCode.NOT_FOUND, f"no finished operation {request_id}")
        progress = Progress.from_json(entry["result"])
        progress.request_id = request_id
        return progress

    async def list(self, ctx: Ctx, page_size: int, page_token: str | None, filters: dict[str, str]) -> ListResult:
        kind = self._kind(ctx)
        root = root_of(ctx.target)
        if not root.is_dir():
            return ListResult([])
        walked = await asyncio.to_thread(_walk, root, kind)
        found = sorted(native_id for native_id in walked if page_token is None or native_id > page_token)
        page = found[:page_size]
        return ListResult(page, page[-1] if len(found) > page_size else None)


def _walk(root: Path, kind: str) -> list[str]:
    """Every regular file (or directory) under the root; symbolic links are not resources of their own."""
    found = []
    for directory, subdirectories, names in os.walk(root, followlinks=False):
        base = Path(directory)
        if kind == DIRECTORY:
            found.extend(relative_to(root, base / name) for name in subdirectories
                         if not (base / name).is_symlink())
        else:
            found.extend(relative_to(root, base / name) for name in names
                         if not name.endswith(".svc-tmp") and (base / name).is_file()
                         and not (base / name).is_symlink())
    return found


def _top(path: str) -> str:
    parts = path.split("/")
    return parts[1].replace("~1", "/").replace("~0", "~") if len(parts) > 1 else path
