"""The LOCAL plugin's operations on a real directory, through the in-process runner (the same dispatch and
error mapping as in the agent)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from svc_plugin_local import Plugin

from svc.plugins.journal import Journal
from svc.plugins.runner import Call, InProcessRunner
from svc.plugins.sdk import ErrorCode, Status, is_recoverable

FILE = "LOCAL::FS::File"
DIRECTORY = "LOCAL::FS::Directory"


class Local:
    """A LOCAL plugin over ``root`` with synchronous helpers."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runner = InProcessRunner("LOCAL", Plugin())
        self.target = {"Type": "LOCAL", "Root": str(root)}

    def call(self, kind: str = FILE, token: str | None = None) -> Call:
        return Call(kind, self.target, 10.0, token)

    def run(self, coroutine: Any) -> Any:
        return asyncio.run(coroutine)

    def create(self, properties: dict[str, Any], kind: str = FILE, token: str | None = None) -> Any:
        return self.run(self.runner.create(self.call(kind, token), "x", properties))

    def read(self, native_id: str, kind: str = FILE) -> Any:
        return self.run(self.runner.read(self.call(kind), native_id, None))

    def update(self, native_id: str, desired: dict[str, Any], patch: list[dict[str, Any]], kind: str = FILE,
               token: str | None = None) -> Any:
        return self.run(self.runner.update(self.call(kind, token), native_id, {}, desired, patch))

    def delete(self, native_id: str, kind: str = FILE, token: str | None = None) -> Any:
        return self.run(self.runner.delete(self.call(kind, token), native_id))

    def status(self, request_id: str) -> Any:
        return self.run(self.runner.status(self.call(), request_id, ""))

    def list(self, kind: str = FILE, page_size: int = 2) -> list[str]:
        ids: list[str] = []
        token = None
        while True:
            page = self.run(self.runner.list(self.call(kind), page_size, token, {}))
            assert len(page.native_ids) <= page_size
            ids.extend(page.native_ids)
            token = page.next_page_token
            if not token:
                return ids


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Local:
    monkeypatch.setenv("SVC_PLUGIN_STATE_DIR", str(tmp_path / "state"))
    return Local(tmp_path / "root")


def test_create_writes_the_file_with_its_parents_and_read_returns_it(local: Local) -> None:
    progress = local.create({"Path": "a/b/c.txt", "Content": "hello\n", "Mode": "0640"})
    assert progress.status is Status.SUCCESS and progress.native_id == "a/b/c.txt"
    expected = {"Path": "a/b/c.txt", "Content": "hello\n", "Mode": "0640"}
    assert progress.properties == expected
    assert (local.root / "a" / "b" / "c.txt").read_text() == "hello\n"
    assert oct((local.root / "a/b/c.txt").stat().st_mode & 0o777) == "0o640"
    assert local.read("a/b/c.txt").properties == expected


def test_a_file_without_content_is_empty_and_without_mode_follows_the_umask(local: Local) -> None:
    progress = local.create({"Path": "empty"})
    umask = os.umask(0)
    os.umask(umask)
    assert progress.properties == {"Path": "empty", "Content": "", "Mode": f"{0o666 & ~umask:04o}"}


def test_an_existing_file_is_not_overwritten(local: Local) -> None:
    local.root.mkdir()
    (local.root / "taken").write_text("mine")
    progress = local.create({"Path": "taken", "Content": "theirs"})
    assert progress.status is Status.FAILURE and progress.error_code is ErrorCode.ALREADY_EXISTS
    assert "taken already exists" in progress.message
    assert (local.root / "taken").read_text() == "mine"


@pytest.mark.parametrize(("path", "says"), [
    ("../outside", "may not contain '..'"), ("a/../../outside", "may not contain '..'"),
    ("/etc/passwd", "must be relative"), ("a//b", "not canonical"), ("./a", "not canonical"),
    ("a/", "not canonical"), ("", "Path is required"),
])
def test_paths_that_leave_the_root_or_are_not_canonical_are_refused(local: Local, tmp_path: Path, path: str,
                                                                     says: str) -> None:
    progress = local.create({"Path": path, "Content": "x"})
    assert progress.status is Status.FAILURE and progress.error_code is ErrorCode.INVALID_REQUEST
    assert says in progress.message and "\n" not in progress.message
    assert not (tmp_path / "outside").exists()


def test_a_symbolic_link_out_of_the_root_is_refused_for_every_operation(local: Local, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s3cret")
    local.root.mkdir()
    (local.root / "door").symlink_to(outside)
    created = local.create({"Path": "door/new", "Content": "x"})
    assert created.error_code is ErrorCode.INVALID_REQUEST and "symbolic link" in created.message
    assert not (outside / "new").exists()
    read = local.read("door/secret")
    assert read.error_code is ErrorCode.INVALID_REQUEST and read.properties is None
    assert local.delete("door/secret").error_code is ErrorCode.INVALID_REQUEST
    assert (outside / "secret").read_text() == "s3cret"
    assert local.list() == []  # links are not followed when listing


def test_a_link_that_stays_under_the_root_is_followed_and_a_deeper_one_that_leaves_it_is_refused(
        local: Local, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (local.root / "real" / "deep").mkdir(parents=True)
    (local.root / "alias").symlink_to(local.root / "real")
    (local.root / "real" / "deep" / "door").symlink_to(tmp_path / "outside")
    assert local.create({"Path": "alias/f", "Content": "in"}).status is Status.SUCCESS
    assert (local.root / "real" / "f").read_text() == "in"
    refused = local.create({"Path": "alias/deep/door/f", "Content": "out"})
    assert refused.error_code is ErrorCode.INVALID_REQUEST and "symbolic link" in refused.message
    assert local.create({"Path": "real/deep/door/f", "Content": "out"}).error_code is ErrorCode.INVALID_REQUEST
    assert not (tmp_path / "outside" / "f").exists()


def test_a_create_answers_what_a_read_of_the_file_then_shows(local: Local, tmp_path: Path) -> None:
    # A create answers what it wrote without reading it back: it must be what a read finds.
    for properties in ({"Path": "plain"}, {"Path": "a/b/moded", "Content": "x\r\n", "Mode": "0604"},
                       {"Path": "unicode", "Content": "é – 😀\n" * 3}):
        created = local.create(properties)
        assert created.status is Status.SUCCESS and created.properties == local.read(properties["Path"]).properties
    # Resumed after a crash that left the file with a mode of its own: a create without a mode keeps it.
    Journal("LOCAL", tmp_path / "state" / "journal").begin("tok-r", "Create", "kept")
    (local.root / "kept").write_text("partial")
    (local.root / "kept").chmod(0o640)
    resumed = local.create({"Path": "kept", "Content": "whole"}, token="tok-r")
    assert resumed.properties == local.read("kept").properties == {"Path": "kept", "Content": "whole", "Mode": "0640"}


def test_update_changes_content_and_mode_in_place_and_refuses_the_path(local: Local) -> None:
    local.create({"Path": "f", "Content": "one", "Mode": "0600"})
    updated = local.update("f", {"Path": "f", "Content": "two", "Mode": "0644"},
                           [{"op": "replace", "path": "/Content", "value": "two"}])
    assert updated.status is Status.SUCCESS
    assert updated.properties == {"Path": "f", "Content": "two", "Mode": "0644"}
    inode = (local.root / "f").stat().st_ino
    mode_only = local.update("f", {"Path": "f", "Content": "two", "Mode": "0400"},
                             [{"op": "replace", "path": "/Mode", "value": "0400"}])
    assert mode_only.properties["Mode"] == "0400"
    assert (local.root / "f").stat().st_ino == inode  # a mode change does not rewrite the file
    cleared = local.update("f", {"Path": "f"}, [{"op": "remove", "path": "/Content"}])
    assert cleared.properties["Content"] == ""
    moved = local.update("f", {"Path": "g"}, [{"op": "replace", "path": "/Path", "value": "g"}])
    assert moved.error_code is ErrorCode.NOT_UPDATABLE
    gone = local.update("nope", {"Path": "nope", "Content": "x"}, [])
    assert gone.error_code is ErrorCode.NOT_FOUND


def test_a_repeated_token_gets_the_first_answer_and_status_knows_it(local: Local) -> None:
    first = local.create({"Path": "f", "Content": "one"}, token="tok-1")
    (local.root / "f").write_text("changed since")
    again = local.create({"Path": "f", "Content": "one"}, token="tok-1")
    assert again.status is Status.SUCCESS and again.native_id == first.native_id == "f"
    assert (local.root / "f").read_text() == "changed since"  # not written twice
    status = local.status("tok-1")
    assert status.status is Status.SUCCESS and status.native_id == "f" and status.request_id == "tok-1"
    unknown = local.status("tok-never")
    assert unknown.status is Status.FAILURE and unknown.error_code is ErrorCode.NOT_FOUND


def test_a_create_that_began_before_a_crash_is_finished_by_its_token(local: Local, tmp_path: Path) -> None:
    # The process died after writing the file but before the journal said "done".
    Journal("LOCAL", tmp_path / "state" / "journal").begin("tok-2", "Create", "half")
    local.root.mkdir()
    (local.root / "half").write_text("partial")
    assert local.status("tok-2").error_code is ErrorCode.NOT_FOUND  # not finished: the agent sends it again
    resumed = local.create({"Path": "half", "Content": "whole"}, token="tok-2")
    assert resumed.status is Status.SUCCESS and (local.root / "half").read_text() == "whole"
    other = local.create({"Path": "half", "Content": "whole"}, token="tok-3")
    assert other.error_code is ErrorCode.ALREADY_EXISTS


def test_delete_is_idempotent_and_directories_go_only_when_empty(local: Local) -> None:
    assert local.create({"Path": "d", "Mode": "0750"}, kind=DIRECTORY).properties == {"Path": "d", "Mode": "0750"}
    local.create({"Path": "d/f", "Content": "x"})
    busy = local.delete("d", kind=DIRECTORY)
    assert busy.error_code is ErrorCode.RESOURCE_CONFLICT and is_recoverable(busy.error_code)
    assert "not empty" in busy.message and (local.root / "d" / "f").exists()
    assert local.delete("d/f").status is Status.SUCCESS
    assert local.delete("d/f").status is Status.SUCCESS  # already gone
    assert local.delete("d", kind=DIRECTORY).status is Status.SUCCESS and not (local.root / "d").exists()
    assert local.read("d", kind=DIRECTORY).error_code is ErrorCode.NOT_FOUND


def test_an_existing_directory_is_taken_over_but_a_file_in_its_place_is_not(local: Local) -> None:
    (local.root / "d").mkdir(parents=True)
    taken = local.create({"Path": "d", "Mode": "0700"}, kind=DIRECTORY)
    assert taken.status is Status.SUCCESS and taken.properties == {"Path": "d", "Mode": "0700"}
    (local.root / "f").write_text("x")
    assert local.create({"Path": "f"}, kind=DIRECTORY).error_code is ErrorCode.ALREADY_EXISTS
    assert local.read("f", kind=DIRECTORY).error_code is ErrorCode.NOT_FOUND  # a file is not a directory
    assert local.read("d", kind=FILE).error_code is ErrorCode.NOT_FOUND


def test_list_pages_through_files_and_directories(local: Local) -> None:
    for path in ("b", "a/x", "a/y", "c/d/e", "z"):
        local.create({"Path": path, "Content": path})
    assert local.list(page_size=2) == ["a/x", "a/y", "b", "c/d/e", "z"]
    assert local.list(DIRECTORY, page_size=1) == ["a", "c", "c/d"]


def test_reads_and_lists_of_a_missing_root_find_nothing(local: Local) -> None:
    assert local.read("f").error_code is ErrorCode.NOT_FOUND
    assert local.list() == []


def test_the_root_must_be_absolute_and_may_start_with_a_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              local: Local) -> None:
    local.target = {"Type": "LOCAL", "Root": "relative/root"}
    refused = local.create({"Path": "f"})
    assert refused.error_code is ErrorCode.INVALID_REQUEST and "must be an absolute path" in refused.message
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    local.target = {"Type": "LOCAL", "Root": "~/files"}
    assert local.create({"Path": "f", "Content": "x"}).status is Status.SUCCESS
    assert (tmp_path / "home" / "files" / "f").read_text() == "x"


def test_unknown_types_and_bad_modes_are_invalid_requests(local: Local) -> None:
    unknown = local.create({"Path": "f"}, kind="LOCAL::FS::Socket")
    assert unknown.error_code is ErrorCode.INVALID_REQUEST and "LOCAL::FS::File" in unknown.message
    bad = local.create({"Path": "f", "Mode": "644"})
    assert bad.error_code is ErrorCode.INVALID_REQUEST and "four octal digits" in bad.message
