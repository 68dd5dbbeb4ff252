"""``installed_plugins`` keeps its answer while the import path's directories are unchanged (the CLI server asks
once for all its commands) and reads the entry points again once one changed: a plugin installed or removed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from svc.plugins.installed import installed_plugins


def _install(site: Path, namespace: str) -> Path:
    package = site / f"svc_plugin_{namespace.lower()}"
    package.mkdir()
    (package / "__init__.py").write_text("")
    dist = site / f"svc_plugin_{namespace.lower()}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: svc-plugin-{namespace.lower()}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[svc.plugins]\n{namespace} = svc_plugin_{namespace.lower()}\n")
    return dist


def test_a_plugin_installed_or_removed_is_seen_by_the_next_lookup(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    before = {plugin.namespace for plugin in installed_plugins()}
    assert "ZZTEST" not in before
    assert {plugin.namespace for plugin in installed_plugins()} == before  # kept

    dist = _install(tmp_path, "ZZTEST")
    found = {plugin.namespace: plugin for plugin in installed_plugins()}
    assert set(found) == before | {"ZZTEST"}
    assert found["ZZTEST"].package_dir == tmp_path / "svc_plugin_zztest"

    shutil.rmtree(dist)
    assert {plugin.namespace for plugin in installed_plugins()} == before
