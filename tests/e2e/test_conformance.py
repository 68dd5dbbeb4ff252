"""The shipped conformance kit (``svc.plugins.conformance``) on LOCAL and FAKE, with the cases each plugin ships
(``svc_plugin_local.conformance``, ``svc_plugin_fake.conformance``), through the real subprocess host.

Each case drives one resource type through create, read, a no-op re-apply, an in-place update, a replace on
a create-only change, list (paged), out-of-band change and delete (seen by read, and by destroy), and delete,
with a real agent running the plugin in its own process and the real ``svc`` CLI; then discovery and adoption, and
an extract round trip.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from svc_plugin_fake import conformance as fake
from svc_plugin_local import conformance as local

from svc.plugins.conformance import Case, discovery_phase, extract_phase, run_conformance

CASES: dict[str, Callable[[Path], Case]] = {
    "local-file": local.file_case, "local-directory": local.directory_case, "fake-item": fake.item_case,
    "fake-network": fake.network_case,
}


@pytest.mark.parametrize("name", CASES)
def test_crud_conformance(name: str, home: Path, tmp_path: Path) -> None:
    run_conformance(CASES[name](tmp_path), tmp_path)


@pytest.mark.parametrize("name", CASES)
def test_discovery_conformance(name: str, home: Path, tmp_path: Path) -> None:
    discovery_phase(CASES[name](tmp_path), tmp_path)


@pytest.mark.parametrize("name", CASES)
def test_extract_conformance(name: str, home: Path, tmp_path: Path) -> None:
    extract_phase(CASES[name](tmp_path), tmp_path)
