"""The Pkl binary's version is kept between commands while the binary is the same file (``svc.pkl.binary``)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from svc.pkl import binary


def fake_pkl(path: Path, version: str, runs: Path) -> Path:
    """A ``pkl`` that prints ``version`` and notes each run in ``runs``."""
    path.write_text(f"#!/bin/sh\necho run >> '{runs}'\necho 'Pkl {version} (Linux, native)'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def runs_of(runs: Path) -> int:
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_the_version_is_run_once_while_the_binary_is_unchanged(home: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    pkl = fake_pkl(tmp_path / "pkl", "0.30.2", runs)
    assert binary._version_of(pkl) == (0, 30, 2)
    assert binary._version_of(pkl) == (0, 30, 2)
    assert runs_of(runs) == 1
    cached = home / ".cache" / "svc" / "pkl-versions.json"
    assert str(pkl.resolve()) in cached.read_text()


def test_a_replaced_binary_is_run_again(home: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    pkl = fake_pkl(tmp_path / "pkl", "0.30.2", runs)
    assert binary._version_of(pkl) == (0, 30, 2)
    fake_pkl(tmp_path / "pkl", "0.25.13", runs)  # another size
    assert binary._version_of(pkl) == (0, 25, 13)
    newer = fake_pkl(tmp_path / "other", "0.31.0", runs)
    pkl.unlink()
    pkl.symlink_to(newer)  # the same path, another file
    assert binary._version_of(pkl) == (0, 31, 0)
    assert runs_of(runs) == 3


def test_each_binary_is_kept_beside_the_others(home: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = fake_pkl(tmp_path / "first", "0.30.2", runs)
    second = fake_pkl(tmp_path / "second", "0.31.0", runs)
    for _ in range(2):
        assert binary._version_of(first) == (0, 30, 2)
        assert binary._version_of(second) == (0, 31, 0)
    assert runs_of(runs) == 2


def test_a_damaged_or_unwritable_cache_only_means_running_it(home: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    pkl = fake_pkl(tmp_path / "pkl", "0.30.2", runs)
    cache = home / ".cache" / "svc"
    cache.mkdir(parents=True)
    (cache / "pkl-versions.json").write_text("{not json")
    assert binary._version_of(pkl) == (0, 30, 2)
    assert binary._version_of(pkl) == (0, 30, 2)
    assert runs_of(runs) == 1
    # A cache that cannot be written, whoever runs this (root writes through modes): a file where its directory goes.
    (cache / "pkl-versions.json").unlink()
    cache.rmdir()
    cache.write_text("not a directory")
    assert binary._version_of(pkl) == (0, 30, 2)
    assert binary._version_of(pkl) == (0, 30, 2)
    assert runs_of(runs) == 3


def test_too_old_is_still_refused_from_the_cache(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkl = fake_pkl(tmp_path / "pkl", "0.25.3", tmp_path / "runs")
    monkeypatch.setenv("SVC_PKL", str(pkl))
    for _ in range(2):
        binary.find_pkl.cache_clear()
        with pytest.raises(binary.PklBinaryError, match=r"Pkl 0\.25\.3 .* too old"):
            binary.find_pkl()
    binary.find_pkl.cache_clear()


def test_a_binary_is_run_without_its_compiler_when_it_starts_limited(home: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    pkl = fake_pkl(tmp_path / "pkl", "0.30.2", runs)
    monkeypatch.delenv(binary.JIT_VARIABLE, raising=False)
    assert binary.interpreter_only(pkl)
    monkeypatch.setenv(binary.JIT_VARIABLE, "on")
    assert not binary.interpreter_only(pkl)
    assert runs_of(runs) == 1  # probed once, the answer kept with the version


def test_a_binary_that_does_not_start_limited_is_run_as_it_is(home: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A Pkl that needs more address space (the JVM's, another build) keeps running, with its compiler."""
    runs = tmp_path / "runs"
    pkl = tmp_path / "pkl"
    pkl.write_text(f"#!/bin/sh\necho run >> '{runs}'\n[ \"$(ulimit -v)\" = unlimited ] || exit 33\n"
                   "echo 'Pkl 0.30.2 (Linux, native)'\n")
    pkl.chmod(pkl.stat().st_mode | stat.S_IEXEC)
    monkeypatch.delenv(binary.JIT_VARIABLE, raising=False)
    assert binary._version_of(pkl) == (0, 30, 2)
    assert not binary.interpreter_only(pkl)
    assert runs_of(runs) == 2  # once limited, once as it is; then from the cache


def test_an_entry_kept_by_an_earlier_svc_is_probed_again(home: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    pkl = fake_pkl(tmp_path / "pkl", "0.30.2", runs)
    key, stamp = binary._identity(pkl)
    cache = home / ".cache" / "svc"
    cache.mkdir(parents=True)
    (cache / "pkl-versions.json").write_text(json.dumps({key: {"stamp": stamp, "version": [0, 30, 2]}}))
    assert binary.interpreter_only(pkl)
    assert runs_of(runs) == 1
