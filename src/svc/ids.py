"""Sortable unique ids (KSUIDs): time-ordered, 27 characters, URL-safe."""

from __future__ import annotations

from pathlib import Path

from ksuid import Ksuid


def new_id() -> str:
    return str(Ksuid())


def persistent_id(path: Path) -> str:
    """The id stored in ``path``, created on first use (e.g. the agent id)."""
    if path.is_file():
        existing = path.read_text().strip()
        if existing:
            return existing
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    created = new_id()
    path.write_text(created + "\n")
    return created
