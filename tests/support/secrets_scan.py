"""Looking for a secret where it must never be: files an agent wrote (datastore, logs, plugin journals)
and what its API and CLI answered."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

# Files that hold the secret by design: the formas the test wrote (the user's own text) and the stand-in
# cloud's log.
_OWN_FILES = (".pkl",)
_STAND_IN_LOGS = ("moto.log",)


def files_holding(secret: str, directory: Path, stand_ins: Iterable[Path] = ()) -> list[Path]:
    """The files under ``directory`` holding ``secret``, but for the stand-in clouds' own files (``stand_ins``,
    e.g. a FAKE cloud's database, with its journal files): the cloud holds the secret by design."""
    needle = secret.encode()
    clouds = [(cloud.parent, cloud.name) for cloud in stand_ins]
    return [path for path in sorted(directory.rglob("*"))
            if path.is_file() and path.suffix not in _OWN_FILES and path.name not in _STAND_IN_LOGS
            and not any(path.parent == parent and path.name.startswith(name) for parent, name in clouds)
            and needle in path.read_bytes()]


def assert_nowhere(secret: str, directory: Path, answers: Iterable[str], stand_ins: Iterable[Path] = ()) -> None:
    """The secret is in no file under ``directory`` (but the formas and ``stand_ins``) and in none of ``answers``."""
    scanned = [path for path in directory.rglob("*") if path.is_file()]
    assert any(path.name.endswith(".db") for path in scanned), f"no datastore under {directory} to look in"
    holding = files_holding(secret, directory, stand_ins)
    assert holding == [], f"the secret is stored or logged in plain text in {[str(path) for path in holding]}"
    leaked = [answer for answer in answers if secret in answer]
    assert leaked == [], f"the secret is in an answer: {leaked[0][:200]}"
