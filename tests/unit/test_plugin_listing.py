"""``GET /plugins/{name}`` describes the plugin it names, not every installed one: describing the AWS plugin extracts
its ~1,700 types until they are cached (5 s on a quiet machine, 15 on a loaded one), which a question about another
plugin must not wait for."""

from __future__ import annotations

from typing import Any

import pytest

from svc.plugins import listing
from svc.plugins.installed import InstalledPlugin


@pytest.fixture
def described(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def describe(plugin: InstalledPlugin) -> dict[str, Any]:
        seen.append(plugin.namespace)
        return {"name": plugin.namespace.lower(), "namespace": plugin.namespace}

    monkeypatch.setattr(listing, "describe", describe)
    return seen


def test_a_plugin_named_by_its_namespace_is_the_only_one_described(described: list[str]) -> None:
    assert [plugin["namespace"] for plugin in listing.installed_listing("fake")] == ["FAKE"]
    assert described == ["FAKE"]


def test_a_name_no_namespace_has_describes_every_plugin_for_their_manifest_names(described: list[str]) -> None:
    # A manifest may name its plugin otherwise than its namespace: only its description tells.
    listing.installed_listing("not-a-namespace")
    assert {"AWS", "FAKE", "LOCAL"} <= set(described)


def test_the_whole_listing_describes_every_plugin(described: list[str]) -> None:
    assert {plugin["namespace"] for plugin in listing.installed_listing()} == set(described) >= {"AWS", "FAKE"}
