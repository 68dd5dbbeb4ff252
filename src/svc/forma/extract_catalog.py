"""What ``svc extract`` knows about the plugins' Pkl classes, read from their schema packages.

The wire format names a resource's properties by their keys (``Path``, ``SubnetId``); a forma names them
by the Pkl properties of the plugin's classes (``path``, ``subnetId``), and the mapping is the plugin's
to define (a resource hint's ``outputKeyTransformation``, a field hint's ``outputField``…). So the
mapping is not guessed: ``@svc/internal/extract-catalog.pkl`` reflects on the installed schema packages,
offline, exactly as ``@svc/svc.pkl`` does when it renders a forma.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.pkl import EvaluationRequest, PklError, shared_server
from svc.pkl.packages import implicit_environment, plugin_package, svc_package
from svc.plugins import installed_plugins


class ExtractError(Exception):
    """Extraction cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class Shape:
    """The shape of a property's type: ``scalar`` (references and values included), ``object`` (of
    ``class_id`` when known), ``listing``/``list``/``set`` of ``element``, ``mapping``/``map``/``dynamic``
    with values of ``element``, or ``any``."""

    kind: str = "scalar"
    class_id: str | None = None
    element: Shape | None = None
    scalars: tuple[str, ...] = ()  # of a scalar: the basic types it admits (String, Int, Float, Number, Boolean)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Shape:
        if not data:
            return cls("any")
        inner = data.get("element") or data.get("value")
        return cls(str(data.get("kind", "any")), data.get("class"), cls.from_json(inner) if inner else None,
                   tuple(data.get("scalars") or ()))


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
        return sorted({info.module for info in self.classes.values()})


def _catalog_module(dependencies: list[str]) -> str:
    globs = "".join(f'import* "@{name}/**.pkl" as p{i}\n' for i, name in enumerate(dependencies))
    packages = ", ".join(f"p{i}" for i in range(len(dependencies)))
    return ('import "@svc/internal/extract-catalog.pkl" as catalog\n' + globs
            + f"output {{ value = catalog.describe(List({packages})); renderer = new JsonRenderer {{}} }}\n")


def load_catalog(namespaces: Iterable[str]) -> Catalog:
    """The catalog of the installed plugins of ``namespaces``; an error names a namespace with no plugin."""
    wanted = {namespace.upper() for namespace in namespaces}
    plugins = {p.namespace.upper(): p for p in installed_plugins() if p.has_schema}
    missing = sorted(wanted - plugins.keys())
    if missing:
        raise ExtractError(f"no plugin with a schema package is installed here for {', '.join(missing)}: "
                           "svc extract writes Pkl with the installed plugins' classes (svc plugin list shows them)")
    if not wanted:
        return Catalog()
    packages = [plugin_package(plugins[namespace]) for namespace in sorted(wanted)]
    environment = implicit_environment([svc_package(), *packages])
    request = EvaluationRequest(module_uri="file:///svc-extract-catalog.pkl",
                                module_text=_catalog_module([p.name for p in packages]),
                                readers=environment.readers, project=environment.project)
    try:
        return Catalog.from_json(json.loads(shared_server().evaluate(request)))
    except PklError as exc:
        raise ExtractError(f"cannot read the schema packages of {', '.join(sorted(wanted))}:\n{exc}") from exc
