"""What ``svc extract`` knows about the plugins' Pkl classes, read from their schema packages.

The wire format names a resource's properties by their keys (``Path``, ``SubnetId``); a forma names them
by the Pkl properties of the plugin's classes (``path``, ``subnetId``), and the mapping is the plugin's
to define (a resource hint's ``outputKeyTransformation``, a field hint's ``outputField``…). So the
mapping is not guessed: ``@svc/internal/extract-catalog.pkl`` reflects on the installed schema packages,
offline, exactly as ``@svc/svc.pkl`` does when it renders a forma.

A package may hold thousands of modules (the AWS one, ~1,700), and describing them all takes a minute, so
the catalog reads only what the extracted resources need, in one Pkl request: the modules that set a ``type``
to one of their types (a resource hint) or to their targets' namespace (a config), found by a text search,
and the modules those reach. A type or config declared out of the search's sight (a name built by
interpolation, a hint over several lines) makes its package read whole, in a second request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.forma.pkl_text import string
from svc.pkl import EvaluationRequest, PklError, shared_server
from svc.pkl.packages import LocalPackage, implicit_environment, plugin_package, svc_package
from svc.plugins import installed_plugins


class ExtractError(Exception):
    """Extraction cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class Shape:
    """The shape of a property's type: ``scalar`` (references and values included), ``object`` (of
    ``class_id`` when known), ``listing``/``list``/``set`` of ``element``, ``mapping``/``map``/``dynamic``
    with values of ``element``, or ``any``; a union's other shapes are its ``alternatives``."""

    kind: str = "scalar"
    class_id: str | None = None
    element: Shape | None = None
    scalars: tuple[str, ...] = ()  # of a scalar: the basic types it admits (String, Int, Float, Number, Boolean)
    alternatives: tuple[Shape, ...] = ()  # of a union: its other shapes that are not scalars

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Shape:
        if not data:
            return cls("any")
        inner = data.get("element") or data.get("value")
        return cls(str(data.get("kind", "any")), data.get("class"), cls.from_json(inner) if inner else None,
                   tuple(data.get("scalars") or ()), tuple(cls.from_json(a) for a in data.get("alternatives") or ()))

    def class_ids(self) -> Iterator[str]:
        """The classes a value of this shape can hold objects of, at any depth."""
        if self.class_id:
            yield self.class_id
        if self.element is not None:
            yield from self.element.class_ids()
        for alternative in self.alternatives:
            yield from alternative.class_ids()


@dataclass(frozen=True)
class Field:
    key: str  # on the wire
    name: str | None  # the Pkl property that sets it; None when nothing can (a computed one)
    tracked: bool
    shape: Shape


@dataclass(frozen=True)
class ClassInfo:
    id: str
    module: str  # its import, e.g. "@local/fs.pkl"
    name: str
    fields: tuple[Field, ...] = ()

    def field(self, key: str) -> Field | None:
        return next((f for f in self.fields if f.key == key), None)


@dataclass(frozen=True)
class Catalog:
    resources: Mapping[str, str] = field(default_factory=dict)  # resource type → class id
    configs: Mapping[str, str] = field(default_factory=dict)  # namespace → target config class id
    classes: Mapping[str, ClassInfo] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Catalog:
        classes = {
            class_id: ClassInfo(class_id, info["module"], info["name"], tuple(
                Field(f["key"], f.get("name"), bool(f.get("tracked")), Shape.from_json(f.get("type")))
                for f in info.get("fields") or ()))
            for class_id, info in (data.get("classes") or {}).items()
        }
        return cls(dict(data.get("resources") or {}), dict(data.get("configs") or {}), classes)

    def resource_class(self, resource_type: str) -> ClassInfo | None:
        class_id = self.resources.get(resource_type)
        return self.classes.get(class_id) if class_id else None

    def config_class(self, namespace: str) -> ClassInfo | None:
        class_id = self.configs.get(namespace.upper())
        return self.classes.get(class_id) if class_id else None

    def modules(self) -> list[str]:
        """The modules described: those read for the types and namespaces asked for, and the ones they reach."""
        return sorted({info.module for info in self.classes.values()})

    def modules_reachable(self, class_ids: Iterable[str]) -> list[str]:
        """The modules of these classes and of every class their fields can hold, transitively: every module a
        forma of objects of these classes may import, whatever else the catalog describes."""
        seen: set[str] = set()
        pending = list(class_ids)
        while pending:
            class_id = pending.pop()
            if class_id in seen or class_id not in self.classes:
                continue
            seen.add(class_id)
            pending += [found for f in self.classes[class_id].fields for found in f.shape.class_ids()]
        return sorted({self.classes[class_id].module for class_id in seen})


# Which modules of a package to describe: the ones named, or (None) the whole package.
Seeds = Mapping[str, list[str] | None]


def load_catalog(namespaces: Iterable[str], types: Iterable[str] | None = None) -> Catalog:
    """The classes of the installed plugins of ``namespaces`` that resources of ``types`` and those namespaces'
    targets need (every class of their packages when ``types`` is None); an error names a namespace with no
    plugin."""
    wanted_types = None if types is None else set(types)
    wanted = {namespace.upper() for namespace in namespaces} | {_namespace_of(t) for t in wanted_types or ()}
    plugins = {p.namespace.upper(): p for p in installed_plugins() if p.has_schema}
    missing = sorted(wanted - plugins.keys())
    if missing:
        raise ExtractError(f"no plugin with a schema package is installed here for {', '.join(missing)}: "
                           "svc extract writes Pkl with the installed plugins' classes (svc plugin list shows them)")
    if not wanted:
        return Catalog()
    packages = {namespace: plugin_package(plugins[namespace]) for namespace in sorted(wanted)}
    if wanted_types is None:
        return _describe(packages, dict.fromkeys(packages))
    types_of = {namespace: {t for t in wanted_types if _namespace_of(t) == namespace} for namespace in packages}
    seeds: dict[str, list[str] | None] = {
        namespace: _modules_naming(package, namespace, types_of[namespace]) for namespace, package in packages.items()}
    catalog = _describe(packages, seeds)
    short = [namespace for namespace in packages
             if not types_of[namespace] <= catalog.resources.keys() or namespace not in catalog.configs]
    if short:  # declared out of the text search's sight: read those packages whole
        catalog = _describe(packages, {**seeds, **dict.fromkeys(short)})
    return catalog


def _namespace_of(resource_type: str) -> str:
    return resource_type.split("::")[0].upper()


def _modules_naming(package: LocalPackage, namespace: str, types: set[str]) -> list[str]:
    """The package's modules (paths inside it) that set a ``type`` to one of ``types`` (a resource hint does) or
    to ``namespace`` in any case (a target config's ``type`` default does), on one line."""
    names = [re.escape(t) for t in sorted(types)] + [f"(?i:{re.escape(namespace)})"]
    pattern = re.compile(r'\btype\b[^"\n]*=\s*"(?:' + "|".join(names) + ')"')
    return sorted(path.relative_to(package.directory).as_posix() for path in package.directory.rglob("*.pkl")
                  if path.is_file() and pattern.search(path.read_text(encoding="utf-8", errors="replace")))


def _catalog_module(packages: Mapping[str, LocalPackage], seeds: Seeds) -> str:
    imports: list[str] = ['import "@svc/internal/extract-catalog.pkl" as catalog']
    mappings: list[str] = []
    for i, (namespace, package) in enumerate(packages.items()):
        modules = seeds[namespace]
        if modules is None:
            imports.append(f'import* "@{package.name}/**.pkl" as p{i}')
            mappings.append(f"p{i}")
            continue
        keys = [f"@{package.name}/{module}" for module in modules]
        imports += [f"import {string(key)} as p{i}m{j}" for j, key in enumerate(keys)]
        mappings.append("new Mapping { " + "; ".join(f"[{string(key)}] = p{i}m{j}" for j, key in enumerate(keys))
                        + " }")
    prefixes = ", ".join(f"{string(p.module_uri_prefix)}, {string(f'@{p.name}/')}"
                         for p in (svc_package(), *packages.values()))
    return ("\n".join(imports) + f"\noutput {{ value = catalog.describe(List({', '.join(mappings)}), Map({prefixes})); "
            "renderer = new JsonRenderer {} }\n")


def _describe(packages: Mapping[str, LocalPackage], seeds: Seeds) -> Catalog:
    """One Pkl request: the catalog of ``seeds`` and the modules they reach."""
    environment = implicit_environment([svc_package(), *packages.values()])
    request = EvaluationRequest(module_uri="file:///svc-extract-catalog.pkl",
                                module_text=_catalog_module(packages, seeds),
                                readers=environment.readers, project=environment.project)
    try:
        return Catalog.from_json(json.loads(shared_server().evaluate(request)))
    except PklError as exc:
        raise ExtractError(f"cannot read the schema packages of {', '.join(packages)}:\n{exc}") from exc
