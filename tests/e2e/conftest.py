"""Fixtures the end-to-end modules share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fake_world import World, fake_world


@pytest.fixture
def world(home: Path, tmp_path: Path) -> Iterator[World]:
    """A real agent running the FAKE plugin over a FAKE cloud of its own, for one test (``support.fake_world``).
    A module that needs another world (one for the whole module, AWS on moto) defines its own ``world``."""
    with fake_world(tmp_path) as world:
        yield world
