"""Deriving each resource type's descriptor from a plugin's Pkl schema package alone.

The agent needs every type's :class:`~svc.model.schema.Schema` before it runs a plugin. They come
from the plugin's schema package by reflection (``svc.descriptorsOf`` in ``@svc/svc.pkl``), with no
plugin code involved, and are cached on disk by plugin version (and svc version, which owns the
derivation rules, and a fingerprint of the Pkl files they derive from).

The cache is read at every agent start, so reading it must cost next to nothing for the full AWS package
(~1,700 types): the file keeps each descriptor as its own JSON text, and a descriptor is validated when it is
first read (``LazyMapping``), not at start. A checksum over the file makes a damaged one (truncated, edited,
left by another layout) be extracted again, with a warning, instead of failing a type long after the start.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import logging
import stat
import time
from pathlib import Path

from pydantic import TypeAdapter

from svc import __version__
from svc.model.lazy import LazyMapping
from svc.model.schema import ResourceDescriptor
from svc.paths import replace_file, schema_cache_dir
from svc.pkl import EvaluationRequest, PklError, shared_server
from svc.pkl.packages import implicit_environment, plugin_package, svc_package
from svc.pkl.slices import joined, output_in_slices
from svc.plugins import InstalledPlugin

_FORMAT = 2  # 1: a JSON list of descriptors, validated whole at each read
_log = logging.getLogger(__name__)


@functools.cache
def _descriptors() -> TypeAdapter[list[ResourceDescriptor]]:
    # Built on first use: an agent that reads its descriptors from the cache never validates a whole list.
    return TypeAdapter(list[ResourceDescriptor])


class SchemaExtractionError(Exception):
    """A plugin's schema package does not evaluate; the message is Pkl's, with file and line."""


class DamagedCache(Exception):
    """A schema cache file that is not one this svc wrote whole; the message says what is wrong."""


# A type's descriptor is ~10 kB of JSON (the AWS registry's 1,737 types 18 MB): 50 make about as many bytes per
# answer as a forma's 2,000 resources (``svc.pkl.slices``).
_DESCRIPTORS_PER_ANSWER = 50


def _extraction_module(dependency: str) -> str:
    return (
        'import "@svc/svc.pkl"\n'
        f'import* "@{dependency}/**.pkl" as modules\n'
        "output { value = svc.descriptorsOf(modules); renderer = new JsonRenderer { omitNullProperties = true } }\n"
    )


def _extract(plugin: InstalledPlugin) -> list[ResourceDescriptor]:
    package = plugin_package(plugin)
    environment = implicit_environment([svc_package(), package])
    request = EvaluationRequest(
        # Any file: URI lies inside the implicit project, so the module can use @-imports.
        module_uri="file:///svc-schema-extraction.pkl",
        module_text=_extraction_module(package.name),
        readers=environment.readers,
        project=environment.project,
    )
    try:
        answer = shared_server().converse(request, output_in_slices(size=_DESCRIPTORS_PER_ANSWER))
    except PklError as exc:
        message = f"the schema of plugin {plugin.namespace} {plugin.version} is invalid:\n{exc}"
        raise SchemaExtractionError(message) from exc
    descriptors: list[ResourceDescriptor] = joined(answer, parse=_descriptors().validate_json)
    return descriptors


def _fingerprint(plugin: InstalledPlugin) -> str:
    """Names, sizes and times of the Pkl files the descriptors derive from: a schema edited without a
    version bump (a plugin in development, an editable install) is extracted again, not served stale."""
    stats = []
    for directory in (plugin.schema_dir, svc_package().directory):
        for path in directory.rglob("*.pkl"):
            info = path.stat()  # once: the full AWS package has ~1,700 files, read at every start
            if stat.S_ISREG(info.st_mode):
                stats.append((str(path), info.st_size, info.st_mtime_ns))
    return hashlib.sha256(repr(sorted(stats)).encode()).hexdigest()[:12]


def cache_file(plugin: InstalledPlugin, cache_dir: Path | None = None) -> Path:
    """Where the descriptors of ``plugin``, as its schema files are now, are cached."""
    return ((cache_dir or schema_cache_dir())
            / f"{plugin.namespace}-{plugin.version}-svc-{__version__}-{_fingerprint(plugin)}.v{_FORMAT}.json")


def write_cache(path: Path, texts: dict[str, str]) -> None:
    """Writes each type's descriptor JSON text: a header line (layout, checksum of the rest), then the texts by
    type as one JSON object. Atomic: a reader never sees half a file."""
    body = json.dumps(texts, separators=(",", ":")).encode()
    header = json.dumps({"Format": _FORMAT, "Sha256": hashlib.sha256(body).hexdigest()}).encode()
    replace_file(path, header + b"\n" + body)


def read_cache(path: Path) -> dict[str, str]:
    """Each type's descriptor JSON text from a file ``write_cache`` wrote; ``DamagedCache`` if it did not write
    this one whole (``FileNotFoundError`` if there is none)."""
    data = path.read_bytes()
    head, _, body = data.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        raise DamagedCache("its first line is no header") from None
    if not isinstance(header, dict) or header.get("Format") != _FORMAT:
        raise DamagedCache(f"it is not in layout {_FORMAT}")
    if header.get("Sha256") != hashlib.sha256(body).hexdigest():
        raise DamagedCache("its checksum does not match its content")
    texts = json.loads(body)
    if not isinstance(texts, dict) or not all(isinstance(text, str) for text in texts.values()):
        raise DamagedCache("it holds no descriptor texts by type")
    return texts


def _cached(path: Path, *, warn: bool) -> dict[str, str] | None:
    try:
        return read_cache(path)
    except FileNotFoundError:
        return None
    except DamagedCache as damage:
        if warn:
            _log.warning("the schema cache file %s is damaged (%s); extracting the schemas again", path, damage)
        return None


def _extract_into(path: Path, plugin: InstalledPlugin) -> dict[str, str]:
    _log.info("extracting the resource schemas of plugin %s %s (once; cached in %s)",
              plugin.namespace, plugin.version, path.parent)
    started = time.monotonic()
    descriptors = _extract(plugin)
    _log.info("extracted %d resource schemas of plugin %s in %.1f s",
              len(descriptors), plugin.namespace, time.monotonic() - started)
    # Defaults left out: a large package's hints are mostly default, and the file is read at each start.
    texts = {d.type: d.model_dump_json(by_alias=True, exclude_defaults=True) for d in descriptors}
    write_cache(path, texts)
    return texts


def extract_descriptors(plugin: InstalledPlugin, *, cache_dir: Path | None = None) -> LazyMapping[ResourceDescriptor]:
    """Each resource type of ``plugin``, by type, from its schema package (cached; each validated on first read)."""
    path = cache_file(plugin, cache_dir)
    texts = _cached(path, warn=True)
    if texts is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # One process extracts (a large package takes a while); the others wait for its cache file.
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            texts = _cached(path, warn=False)
            if texts is None:
                texts = _extract_into(path, plugin)
    return LazyMapping({name: functools.partial(ResourceDescriptor.model_validate_json, text)
                        for name, text in texts.items()})
