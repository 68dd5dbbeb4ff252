"""The CLI's block of its config, kept between commands so that a command need not run Pkl to read it.

Reading the config evaluated it with Pkl on every command: for a command with no forma (``svc inventory``,
``svc command status``) that was starting the Pkl server, about 30 ms of its time. The rendered ``cli`` block is
kept in the user's cache directory (``$XDG_CACHE_HOME/svc/cli-config``: one file per config file, mode 0600, the
last 32 config files) and used while nothing it came from has changed: the file's own bytes, svc's version, and
every ``svc:`` and ``plugins:`` module the evaluation read (their text, read again and compared).

Only what Pkl computes from those alone is kept: a file that reads anything (``read("env:…")``, ``read("file:…")``
or any other resource) or imports a module from anywhere else (a file next to it, a package) is evaluated every
time, and so is a block that holds a password (``cli.auth``, or a package URL with one in it): no secret is written
to the cache. The check is on the text and errs on the side of evaluating: the word ``read`` followed by a
parenthesis anywhere, even in a comment, is enough. Anything unreadable in the cache counts as nothing cached.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from svc import __version__
from svc.paths import cache_home, write_private
from svc.pkl_source import IMPORT_KEYWORD, READ

_FORMAT = 1
# The imports, amends and extends whose string is a plain literal (``IMPORT_KEYWORD`` finds them all).
_TARGET = re.compile(r'(?:import(?<!\wimport)\*?|amends(?<!\wamends)|extends(?<!\wextends))\s*\(?\s*"([^"\\]*)"')
_OWN_SCHEMES = ("svc:", "plugins:")
_KEPT = 32  # entries (config files) kept; the least recently written go first


def cache_dir() -> Path:
    return cache_home() / "cli-config"


def self_contained(text: str, *, relative_imports: bool = False) -> bool:
    """Whether a module's value depends only on the modules it imports from ``svc:`` and ``plugins:`` (and, with
    ``relative_imports``, on modules next to it under the same scheme): it reads no resource and imports nothing
    else. False whenever the text is not plainly so."""
    if READ.search(text):
        return False
    targets = _TARGET.findall(text)
    if len(targets) != len(IMPORT_KEYWORD.findall(text)):
        return False  # a URI in a string of another kind (#"…"#, escapes): not worth the doubt
    return all(target.startswith(_OWN_SCHEMES) or (relative_imports and ":" not in target) for target in targets)


def _digest(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


@dataclass
class Recorder:
    """Notes what an evaluation's module readers served: URI → digest of the text; ``contained`` turns False as
    soon as a served module is not self-contained (svc's own modules are svc's version's)."""

    served: dict[str, str] = field(default_factory=dict)
    contained: bool = True

    def wrap(self, reader: Any) -> Any:
        return _RecordingReader(reader, self)

    def note(self, uri: str, text: str) -> None:
        self.served[uri] = _digest(text)
        if not uri.startswith("svc:") and not self_contained(text, relative_imports=True):
            self.contained = False


class _RecordingReader:
    """A module reader that serves as the one it wraps and tells the recorder what it served."""

    def __init__(self, reader: Any, recorder: Recorder) -> None:
        self._reader = reader
        self._recorder = recorder
        self.scheme = reader.scheme
        self.is_hierarchical = reader.is_hierarchical
        self.is_globbable = reader.is_globbable
        self.is_local = reader.is_local

    def read(self, uri: str) -> str:
        text = self._reader.read(uri)
        self._recorder.note(uri, text)
        return text

    def list(self, uri: str) -> Any:
        self._recorder.contained = False  # a glob import: what it finds may change without a file read here
        return self._reader.list(uri)


def _bundled_text(uri: str) -> str:
    """An ``svc:`` module as svc's reader serves it (``svc.pkl.readers.bundled_modules``), read without loading the
    Pkl client: a config that imports nothing else is checked without it."""
    parts = [part for part in uri.removeprefix("svc:").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise KeyError(uri)
    return importlib.resources.files("svc.pkl_assets").joinpath(*parts).read_text(encoding="utf-8")


def _holds_a_secret(block: dict[str, Any]) -> bool:
    """A password: the basic-auth one, or one inside a package index or find-links URL."""
    if block.get("auth") is not None:
        return True
    upgrade = block.get("upgrade") or {}
    urls = [upgrade.get("indexUrl"), *(upgrade.get("findLinks") or [])]
    try:
        return any(isinstance(url, str) and urlsplit(url).password is not None for url in urls)
    except ValueError:  # not a URL that parses: not worth the doubt
        return True


def _entry_path(source: Path | None) -> Path:
    name = "defaults" if source is None else _digest(str(source.resolve()))[:32]
    return cache_dir() / f"{name}.json"


def _source_digest(source: Path | None) -> str:
    return "" if source is None else _digest(source.read_bytes())


def read_block(source: Path | None, readers: Callable[[], Sequence[Any]]) -> dict[str, Any] | None:
    """The cached ``cli`` block of ``source`` (None: the defaults, no file), if nothing it came from changed; else
    None. ``readers``: the module readers to read the served ``plugins:`` modules again with."""
    try:
        entry = json.loads(_entry_path(source).read_text(encoding="utf-8"))
        if (entry.get("format") != _FORMAT or entry.get("svc") != __version__
                or entry.get("source") != _source_digest(source)):
            return None
        served: dict[str, str] = entry["served"]
        by_scheme: dict[str, Any] | None = None
        for uri, digest in served.items():
            if uri.startswith("svc:"):
                text = _bundled_text(uri)
            else:
                by_scheme = by_scheme or {reader.scheme: reader for reader in readers()}
                text = by_scheme[uri.partition(":")[0]].read(uri)
            if _digest(text) != digest:
                return None
        block = entry["cli"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return block if isinstance(block, dict) else None


def write_block(source: Path | None, recorder: Recorder, block: dict[str, Any]) -> None:
    """Keeps ``block`` for the next command, when it may be kept (see the module's description); quietly does
    nothing when the cache directory cannot be written."""
    if _holds_a_secret(block) or not recorder.contained:
        return
    try:
        if source is not None and not self_contained(source.read_text(encoding="utf-8")):
            return
        entry = {"format": _FORMAT, "svc": __version__, "source": _source_digest(source),
                 "served": recorder.served, "cli": block}
        write_private(_entry_path(source), json.dumps(entry), keep=_KEPT)
    except (OSError, ValueError):
        return

