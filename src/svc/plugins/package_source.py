"""Where svc installs its own distributions from (``svc upgrade``, and plugins through the agent): the source svc
itself came from, or one the user names; never a guess.

pip installs whatever its sources offer under a name, and the public index holds an unrelated project called
``svc``. So an install names its source explicitly, taking the first of:

1. the command's ``--index-url`` / ``--find-links`` (or, for a plugin, the request's ``indexUrl`` / ``findLinks``);
2. ``cli.upgrade`` in the CLI config;
3. the source the previous ``svc upgrade`` installed from, recorded in the installed svc's ``.dist-info``;
4. the location pip recorded (PEP 610 ``direct_url.json``) when svc was installed from a wheel file or URL.

Else it refuses: an install by name leaves no trace of the index it came from.
"""

from __future__ import annotations

import importlib
import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path


class PackageSourceError(Exception):
    """No source can be named (an install from a source tree or a repository): the message says what to pass."""


# Listed in the dist's RECORD, so pip removes it with the dist it describes.
RECORD_FILE = "svc_upgrade_source.json"


@dataclass(frozen=True)
class PackageSource:
    """An index (with optional link locations) or link locations alone; ``origin`` says where it came from."""

    index_url: str | None
    find_links: tuple[str, ...]
    origin: str

    def describe(self) -> str:
        """Where it is, for messages and logs: without any password a URL carries."""
        places = ([self.index_url] if self.index_url else []) + list(self.find_links)
        return f"{', '.join(redacted(place) for place in places)} ({self.origin})"

    def pip_arguments(self) -> list[str]:
        arguments = ["--index-url", self.index_url] if self.index_url else ["--no-index"]
        for link in self.find_links:
            arguments += ["--find-links", link]
        return arguments

    def pip_environment(self, environment: dict[str, str], empty_dir: Path) -> dict[str, str]:
        """``environment`` with every source setting of pip's own configuration replaced by this source.

        The command line replaces a configured index but only appends to configured extra indexes and link
        locations, which could still offer a same-named project. Environment variables override pip's config
        files, so each of those lists is set to a harmless value here: this index again, an empty directory."""
        overridden = dict(environment)
        overridden["PIP_FIND_LINKS"] = str(empty_dir)
        if self.index_url:
            overridden["PIP_INDEX_URL"] = self.index_url
            overridden["PIP_EXTRA_INDEX_URL"] = self.index_url
            overridden["PIP_NO_INDEX"] = "false"
        else:
            overridden["PIP_NO_INDEX"] = "true"
        return overridden

    def document(self) -> dict[str, object]:
        return {"indexUrl": self.index_url, "findLinks": list(self.find_links)}


def from_options(index_url: str | None, find_links: list[str] | None, origin: str) -> PackageSource | None:
    links = tuple(link for link in (find_links or []) if link)
    if not index_url and not links:
        return None
    return PackageSource(index_url or None, links, origin)


def _installed_svc() -> Distribution:
    importlib.invalidate_caches()  # pip may have just replaced the dist-info this process saw at start
    try:
        return distribution("svc")
    except PackageNotFoundError as exc:
        raise PackageSourceError("svc's own package metadata is missing from this environment; reinstall svc") from exc


def recorded_source() -> PackageSource | None:
    """The source the last ``svc upgrade`` installed the current svc from."""
    text = _installed_svc().read_text(RECORD_FILE)
    if not text:
        return None
    try:
        document = json.loads(text)
        links = [str(link) for link in document.get("findLinks") or []]
        return from_options(document.get("indexUrl"), links, "recorded when svc was last upgraded")
    except (ValueError, AttributeError):
        return None  # a damaged record is as good as none: the next rule applies


def installed_from() -> PackageSource | None:
    """The location pip recorded for the current svc (PEP 610), as a source of later releases."""
    svc = _installed_svc()
    text = svc.read_text("direct_url.json")
    if not text:
        return None  # installed by name from some index: pip records no index
    direct = json.loads(text)
    url = str(direct.get("url", ""))
    if "dir_info" in direct:
        kind = "an editable install of" if direct["dir_info"].get("editable") else "installed from"
        raise PackageSourceError(f"svc {svc.version} is {kind} the source tree {_location(url)}; update that tree "
                                 "instead, or pass --index-url / --find-links where svc releases are published")
    if "vcs_info" in direct:
        vcs = direct["vcs_info"].get("vcs", "a repository")
        raise PackageSourceError(f"svc {svc.version} was installed from {vcs} {url}; pass --index-url / "
                                 "--find-links where svc releases are published")
    # A wheel or sdist file: its siblings are the releases (a directory, or a page linking to them).
    parent = url.rsplit("/", 1)[0]
    return PackageSource(None, (_location(parent),), f"where svc {svc.version} was installed from")


def redacted(location: str) -> str:
    """``location`` with the password of an ``https://user:password@host/…`` URL replaced by ``***``."""
    parsed = urllib.parse.urlsplit(location)
    if parsed.password is None:
        return location
    host = parsed.hostname or ""
    netloc = f"{parsed.username}:***@{host}" + (f":{parsed.port}" if parsed.port else "")
    return urllib.parse.urlunsplit(parsed._replace(netloc=netloc))


def _location(url: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    return urllib.request.url2pathname(parsed.path) if parsed.scheme == "file" else url


def record(source: PackageSource) -> str | None:
    """Writes ``source`` into the installed svc's dist-info and lists it in RECORD; returns why not, if it could not."""
    svc = _installed_svc()
    metadata = next((entry for entry in svc.files or [] if entry.name == "METADATA"
                     and entry.parent.name.endswith(".dist-info")), None)
    if metadata is None:
        return f"svc {svc.version} lists no METADATA in its RECORD"
    info_dir = Path(str(svc.locate_file(metadata))).parent
    entry = f"{metadata.parent.as_posix()}/{RECORD_FILE},,"
    try:
        (info_dir / RECORD_FILE).write_text(json.dumps(source.document()) + "\n")
        listed = (info_dir / "RECORD").read_text()
        if entry not in listed.splitlines():
            with (info_dir / "RECORD").open("a") as record_file:
                record_file.write(("" if listed.endswith("\n") or not listed else "\n") + entry + "\n")
    except OSError as exc:
        return str(exc)
    return None
