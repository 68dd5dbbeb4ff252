"""``svc.paths.replace_file``: what every file svc writes whole goes through (saved plans, extracted formas, caches)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from svc.paths import replace_file, write_private


def test_the_new_text_replaces_the_old_and_nothing_else_is_left(tmp_path: Path) -> None:
    path = tmp_path / "plan.out"
    path.write_text("old")
    replace_file(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    replace_file(path, b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.out"]


def test_the_mode_is_the_one_asked_less_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        replace_file(tmp_path / "shared", "x")
        replace_file(tmp_path / "private", "x", mode=0o600)
    finally:
        os.umask(previous)
    assert (tmp_path / "shared").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "private").stat().st_mode & 0o777 == 0o600
    write_private(tmp_path / "cache" / "entry.json", "{}")
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "cache" / "entry.json").stat().st_mode & 0o777 == 0o600


def test_a_failed_replace_leaves_the_file_as_it_was_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # a directory where the file would go: os.replace fails
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        replace_file(target, "new")
    assert (target / "inside").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    with pytest.raises(FileNotFoundError):
        replace_file(tmp_path / "missing" / "file", "x")
