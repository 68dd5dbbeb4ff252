"""Deriving each resource type's descriptor from a plugin's Pkl schema package alone.

The agent needs every type's :class:`~svc.model.schema.Schema` before it runs a plugin. They come
from the plugin's schema package by reflection (``svc.descriptorsOf`` in ``@svc/svc.pkl``), with no
plugin code involved, and are cached on disk by plugin version (and svc version, which owns the
derivation rules).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import time
from pathlib import Path

from pydantic import TypeAdapter

from svc import __version__
from svc.model.schema import ResourceDescriptor
from svc.pkl import EvaluationRequest, PklError, shared_server
from svc.pkl.packages import implicit_environment, plugin_package, svc_package
from svc.plugins import InstalledPlugin

_DESCRIPTORS = TypeAdapter(list[ResourceDescriptor])
_log = logging.getLogger(__name__)


class SchemaExtractionError(Exception):
    """A plugin's schema package does not evaluate; the message is Pkl's, with file and line."""


def default_cache_dir() -> Path:
    """``$SVC_SCHEMA_CACHE``, else ``svc/schemas`` in the user's cache directory."""
    if os.environ.get("SVC_SCHEMA_CACHE"):
        return Path(os.environ["SVC_SCHEMA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "svc" / "schemas"


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
        text = shared_server().evaluate(request)
    except PklError as exc:
        message = f"the schema of plugin {plugin.namespace} {plugin.version} is invalid:\n{exc}"
        raise SchemaExtractionError(message) from exc
    return _DESCRIPTORS.validate_json(text)


def _fingerprint(plugin: InstalledPlugin) -> str:
    """Names, sizes and times of the Pkl files the descriptors derive from: a schema edited without a
    version bump (a plugin in development, an editable install) is extracted again, not served stale."""
    stats = sorted((str(path), path.stat().st_size, path.stat().st_mtime_ns)
                   for directory in (plugin.schema_dir, svc_package().directory)
                   for path in directory.rglob("*.pkl") if path.is_file())
    return hashlib.sha256(repr(stats).encode()).hexdigest()[:12]


def extract_descriptors(plugin: InstalledPlugin, *, cache_dir: Path | None = None) -> dict[str, ResourceDescriptor]:
    """Each resource type of ``plugin``, by type, from its schema package (cached by version)."""
    cache = ((cache_dir or default_cache_dir())
             / f"{plugin.namespace}-{plugin.version}-svc-{__version__}-{_fingerprint(plugin)}.json")
    if not cache.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        # One process extracts (a large package takes a while); the others wait for its cache file.
        with open(cache.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not cache.is_file():
                _log.info("extracting the resource schemas of plugin %s %s (once; cached in %s)",
                          plugin.namespace, plugin.version, cache.parent)
                started = time.monotonic()
                descriptors = _extract(plugin)
                _log.info("extracted %d resource schemas of plugin %s in %.1f s",
                          len(descriptors), plugin.namespace, time.monotonic() - started)
                temporary = cache.with_suffix(f".{os.getpid()}.tmp")
                # Defaults left out: a large package's hints are mostly default, and the file is read at each start.
                temporary.write_bytes(_DESCRIPTORS.dump_json(descriptors, by_alias=True, exclude_defaults=True))
                temporary.replace(cache)  # atomic: a reader never sees half a file
                return {descriptor.type: descriptor for descriptor in descriptors}
    descriptors = _DESCRIPTORS.validate_json(cache.read_bytes())
    return {descriptor.type: descriptor for descriptor in descriptors}
