"""Whether the files the CLI server imported changed on disk (``svc.cli.source_watch.SourceWatch``): told by
inotify, else by comparing the files' states; either way a write, a replacement, a deletion or a touch of a watched
file counts, and nothing else in its directory does."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from svc.cli import source_watch
from svc.cli.source_watch import SourceWatch


@pytest.fixture(params=["inotify", "states"])
def watching(request: pytest.FixtureRequest,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[Path]], SourceWatch]]:
    if request.param == "states":
        def unavailable(self: SourceWatch) -> None:
            raise OSError("no inotify here")

        monkeypatch.setattr(SourceWatch, "_watch", unavailable)
    made: list[SourceWatch] = []

    def watch(paths: list[Path]) -> SourceWatch:
        made.append(SourceWatch(str(path) for path in paths))
        assert (made[-1].fileno() >= 0) == (request.param == "inotify")
        return made[-1]

    yield watch
    for watch_ in made:
        watch_.close()


@pytest.fixture
def sources(tmp_path: Path) -> list[Path]:
    package = tmp_path / "package"
    package.mkdir()
    files = [package / "a.py", package / "b.py", tmp_path / "c.py"]
    for file in files:
        file.write_text(f"# {file.name}\n")
    return files


def test_nothing_changed_and_other_files_do_not_count(watching: Callable[[list[Path]], SourceWatch],
                                                      sources: list[Path]) -> None:
    watch = watching(sources[:2])
    assert not watch.changed()
    (sources[0].parent / "new.py").write_text("x = 1\n")  # a file imported by no one
    (sources[0].parent / "__pycache__").mkdir()
    (sources[0].parent / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0" * 16)  # the bytecode cache
    sources[2].write_text("# changed, not watched\n")
    sources[0].read_text()
    assert not watch.changed()


@pytest.mark.parametrize("change", ["write", "replace", "delete", "touch"])
def test_a_watched_file_changed(watching: Callable[[list[Path]], SourceWatch], sources: list[Path],
                                change: str) -> None:
    watch = watching(sources)
    target = sources[1]
    if change == "write":
        with target.open("a") as file:  # in place, as `echo >>` does: the directory's time stays
            file.write("# more\n")
    elif change == "replace":  # as pip and editors do
        (target.parent / "b.py.tmp").write_text("# new\n")
        os.replace(target.parent / "b.py.tmp", target)
    elif change == "delete":
        target.unlink()
    else:
        seen = target.stat()
        os.utime(target, ns=(seen.st_atime_ns, seen.st_mtime_ns + 1_000_000_000))
    assert watch.changed()
    assert watch.changed()  # and stays so


def test_a_change_before_the_watch_began_counts(monkeypatch: pytest.MonkeyPatch, sources: list[Path]) -> None:
    """A file changed after its state was taken but before its directory's watch began is in no event queue: the
    states are compared once more when the watches are on."""
    original = source_watch._file_states
    calls: list[int] = []

    def then_changed(paths: Iterable[str]) -> dict[str, tuple[int, int]]:
        states = original(paths)
        if not calls:
            sources[0].write_text("# changed meanwhile, and longer\n")
        calls.append(1)
        return states

    monkeypatch.setattr(source_watch, "_file_states", then_changed)
    watch = SourceWatch(str(path) for path in sources)
    try:
        assert watch.fileno() >= 0
        assert watch.changed()
    finally:
        watch.close()
