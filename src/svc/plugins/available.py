"""The plugins a package source offers (``GET /plugins?scope=available``, ``svc plugin search``).

A svc plugin is a wheel whose distribution registers a ``svc.plugins`` entry point and ships ``manifest.pkl``.
An index cannot be asked which wheels those are, so the search goes by a name convention and checks each find:

1. candidates are the projects named ``svc-plugin-*``: on an index, the links of its root page (PEP 503); in a
   ``--find-links`` location, the wheel files (a directory, or the page a URL answers with);
2. each candidate's versions are its wheel files' versions; its newest wheel is read: its metadata, its entry
   points and its manifest (evaluated with Pkl, as an installed plugin's is). A wheel with no ``svc.plugins``
   entry point or with a manifest that does not evaluate is not listed.

What was read of a wheel is kept for the life of the process: a released file does not change.
"""

from __future__ import annotations

import configparser
import functools
import io
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from svc.plugins.installed import PLUGIN_ENTRY_POINT_GROUP, InstalledPlugin, normalized_name
from svc.plugins.manifest import ManifestError, read_manifest
from svc.plugins.package_source import PackageSource, redacted

Json = dict[str, Any]
PLUGIN_PROJECT_PREFIX = "svc-plugin-"
_TIMEOUT = 30.0  # seconds for one page or wheel


class SourceUnreadable(Exception):
    """The package source cannot be read (a page or a wheel); the message names which."""


@dataclass(frozen=True)
class _Wheel:
    project: str  # normalized
    version: Version
    url: str


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _as_url(location: str) -> str:
    return location if "://" in location else Path(location).resolve().as_uri()


def _links(url: str) -> list[str]:
    """The absolute URLs a page links to; a ``file:`` directory's page is its ``index.html``, else its entries."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "file":
        directory = Path(urllib.request.url2pathname(parsed.path))
        if directory.is_dir():
            page = directory / "index.html"
            if not page.is_file():
                return [entry.resolve().as_uri() for entry in sorted(directory.iterdir())]
            url = page.as_uri()
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as response:
            text = response.read().decode(errors="replace")
            base = response.geturl()
    except (OSError, ValueError) as error:
        raise SourceUnreadable(f"cannot read {redacted(url)}: {error}") from error
    parser = _Links()
    parser.feed(text)
    return [urllib.parse.urljoin(base, href) for href in parser.hrefs]  # pages are asked for with their final "/"


def _wheel(url: str) -> _Wheel | None:
    filename = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    if not filename.endswith(".whl"):
        return None
    try:
        name, version, _, _ = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    return _Wheel(str(name), version, url.split("#", 1)[0])


def _is_candidate(project: str) -> bool:
    return normalized_name(project).startswith(PLUGIN_PROJECT_PREFIX)


def _candidate_wheels(source: PackageSource) -> dict[str, list[_Wheel]]:
    """Every ``svc-plugin-*`` wheel the source offers, by project."""
    urls: list[str] = []
    if source.index_url:
        root = _as_url(source.index_url).rstrip("/") + "/"
        for project_url in _links(root):
            project = urllib.parse.unquote(project_url.rstrip("/").rsplit("/", 1)[-1])
            if _is_candidate(project):
                urls += _links(project_url.rstrip("/") + "/")
    for location in source.find_links:
        urls += _links(_as_url(location))
    wheels: dict[str, list[_Wheel]] = {}
    for url in urls:
        wheel = _wheel(url)
        if wheel is not None and _is_candidate(wheel.project):
            wheels.setdefault(wheel.project, []).append(wheel)
    return wheels


@functools.lru_cache(maxsize=128)
def _read_wheel(url: str) -> tuple[tuple[str, Any], ...] | None:
    """What a plugin wheel says of itself (the ``Plugin`` fields), None when it is not a svc plugin."""
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as response:
            archive = zipfile.ZipFile(io.BytesIO(response.read()))
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise SourceUnreadable(f"cannot read the wheel {redacted(url)}: {error}") from error
    names = archive.namelist()
    info_dir = next((name.split("/", 1)[0] for name in names if name.endswith(".dist-info/METADATA")), None)
    if info_dir is None or f"{info_dir}/entry_points.txt" not in names:
        return None
    entries = configparser.ConfigParser(delimiters=("=",))
    entries.optionxform = str  # type: ignore[assignment,method-assign] - keep the namespace's case
    entries.read_string(archive.read(f"{info_dir}/entry_points.txt").decode())
    if not entries.has_section(PLUGIN_ENTRY_POINT_GROUP):
        return None
    namespace, target = next(iter(entries.items(PLUGIN_ENTRY_POINT_GROUP)))
    package = target.split(":", 1)[0].strip().replace(".", "/")
    metadata = Parser().parsestr(archive.read(f"{info_dir}/METADATA").decode())
    with tempfile.TemporaryDirectory(prefix="svc-plugin-wheel-") as unpacked:
        archive.extractall(unpacked, [name for name in names if name.startswith(f"{package}/")])
        try:
            manifest = read_manifest(InstalledPlugin(namespace, str(metadata["Version"]), Path(unpacked) / package))
        except ManifestError:
            return None
    info: Json = {"name": manifest.get("name") or namespace.lower(), "type": "resource", "namespace": namespace,
                  "package": str(metadata["Name"]), "summary": manifest.get("summary") or metadata.get("Summary")}
    for key in ("category", "description", "license"):
        if manifest.get(key):
            info[key] = manifest[key]
    return tuple((key, value) for key, value in info.items() if value)


def matches(plugin: Json, query: str = "", category: str = "", plugin_type: str = "") -> bool:
    """``query``: a case-insensitive substring of the name, package, namespace, summary, description or category;
    ``category`` and ``plugin_type``: equal, case aside. Empty: anything."""
    if category and str(plugin.get("category", "")).lower() != category.lower():
        return False
    if plugin_type and str(plugin.get("type", "")).lower() != plugin_type.lower():
        return False
    searched = " ".join(str(plugin.get(key, "")) for key in ("name", "package", "namespace", "summary",
                                                              "description", "category"))
    return not query or query.lower() in searched.lower()


def available_plugins(source: PackageSource, installed: dict[str, str], *, query: str = "", category: str = "",
                      plugin_type: str = "") -> list[Json]:
    """The plugins ``source`` offers that ``matches`` the filters, sorted by name; ``installed``: the installed
    versions by normalized distribution name. ``SourceUnreadable`` when a page or wheel cannot be read."""
    found = []
    for project, wheels in _candidate_wheels(source).items():
        newest = max(wheels, key=lambda wheel: wheel.version)
        described = _read_wheel(newest.url)
        if described is None:
            continue
        plugin = dict(described)
        plugin["availableVersions"] = [str(version) for version in
                                       sorted({wheel.version for wheel in wheels}, reverse=True)]
        if project in installed:
            plugin["installedVersion"] = installed[project]
        if matches(plugin, query, category, plugin_type):
            found.append(plugin)
    return sorted(found, key=lambda plugin: plugin["name"])
