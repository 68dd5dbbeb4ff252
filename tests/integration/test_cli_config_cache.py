"""The CLI's config read from the cache (``svc.config.cli_cache``) while nothing it came from changed: a short
command then runs no Pkl. What a file reads, and any password, is never kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.config import cli_config
from svc.config.cli_cache import cache_dir
from svc.pkl import shared_server, stop_shared_server


def _read_without_pkl(path: Path | None) -> bool:
    """Reads the CLI config with no Pkl server running; whether it stayed so (the block came from the cache)."""
    stop_shared_server()
    cli_config(path)
    ran = shared_server().pid is not None
    stop_shared_server()
    return not ran


@pytest.fixture
def config(home: Path) -> Path:
    path = home / ".config" / "svc" / "svc.conf.pkl"
    path.parent.mkdir(parents=True)
    path.write_text('amends "svc:/Config.pkl"\nimport "plugins:/FAKE.pkl"\n'
                    'agent { resourcePlugins { new FAKE.PluginConfig {} } }\ncli { api { port = 1234 } }\n')
    return path


def test_the_second_read_runs_no_pkl(config: Path) -> None:
    assert cli_config(None).api.port == 1234
    assert _read_without_pkl(None)
    assert cli_config(config).api.port == 1234  # the same file, named


def test_the_defaults_are_kept_too(home: Path) -> None:
    assert cli_config(None).api.port == 49684
    assert _read_without_pkl(None)


def test_an_edited_file_is_read_again(config: Path) -> None:
    cli_config(None)
    assert _read_without_pkl(None)
    config.write_text(config.read_text().replace("1234", "4321"))
    assert not _read_without_pkl(None)
    assert cli_config(None).api.port == 4321


def test_a_file_that_reads_the_environment_is_evaluated_every_time(home: Path, config: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cli_config(None)
    assert _read_without_pkl(None)  # the plain file was kept; this one is not
    config.write_text('amends "svc:/Config.pkl"\ncli { api { port = read("env:SVC_TEST_PORT").toInt() } }\n')
    monkeypatch.setenv("SVC_TEST_PORT", "2000")
    assert cli_config(None).api.port == 2000
    monkeypatch.setenv("SVC_TEST_PORT", "3000")
    assert cli_config(None).api.port == 3000
    assert not _read_without_pkl(None)


def test_no_password_is_kept(home: Path, config: Path) -> None:
    cli_config(None)
    assert _read_without_pkl(None)  # the plain file was kept; this one is not
    config.write_text('amends "svc:/Config.pkl"\n'
                      'cli { auth { type = "basic"; username = "me"; password = "hunter2-not-kept" }\n'
                      '  upgrade { indexUrl = "https://me:token-not-kept@packages.example.com/simple" } }\n')
    assert cli_config(None).auth is not None
    assert not _read_without_pkl(None)
    kept = "".join(entry.read_text() for entry in cache_dir().glob("*")) if cache_dir().exists() else ""
    assert "hunter2" not in kept and "token-not-kept" not in kept


def test_a_damaged_entry_counts_as_none(config: Path) -> None:
    cli_config(None)
    entries = list(cache_dir().glob("*.json"))
    assert entries
    for entry in entries:
        entry.write_text("{not json")
    assert not _read_without_pkl(None)
    assert cli_config(None).api.port == 1234


def test_entries_are_private(config: Path) -> None:
    cli_config(None)
    entries = list(cache_dir().glob("*.json"))
    assert entries and all(entry.stat().st_mode & 0o077 == 0 for entry in entries)
