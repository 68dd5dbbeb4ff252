"""Refusals before planning: unknown types, targets, stacks and plugins; missing required fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from svc.engine.errors import (
    InvalidForma,
    RequiredFieldMissingOnCreate,
    StackReferenceNotFound,
    TargetReferenceNotFound,
)
from svc.engine.planner.inventory import Inventory
from svc.model import values
from svc.model.forma import Forma, Resource
from svc.model.lazy import LazyMapping
from svc.model.schema import Schema


@dataclass
class Catalog:
    """What the running plugins provide: their namespaces and each resource type's descriptor.

    A plugin installed or removed while the agent runs is added or removed here; each change replaces the
    collections whole, so a plan or a sync pass that holds the previous ones reads a consistent set. A type's
    schema is validated when first read (``LazyMapping``): adding, removing and listing types validate none."""

    namespaces: frozenset[str] = frozenset()
    types: Mapping[str, Schema] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.types = LazyMapping.of(self.types)

    def namespace_of(self, resource_type: str) -> str:
        return resource_type.split("::", 1)[0]

    def types_of(self, namespace: str) -> LazyMapping[Schema]:
        """The types of plugin ``namespace`` (any case)."""
        return LazyMapping.of(self.types).selected(
            name for name in self.types if self.namespace_of(name).upper() == namespace.upper())

    def add(self, namespace: str, types: Mapping[str, Schema]) -> None:
        self.remove(namespace)
        self.namespaces = self.namespaces | {namespace}
        self.types = LazyMapping.of(self.types).merged(types)

    def remove(self, namespace: str) -> None:
        self.namespaces = frozenset(name for name in self.namespaces if name.upper() != namespace.upper())
        self.types = LazyMapping.of(self.types).selected(
            name for name in self.types if self.namespace_of(name).upper() != namespace.upper())


def validate_forma(forma: Forma, inventory: Inventory, catalog: Catalog) -> None:
    stacks = {stack.label for stack in forma.stacks}
    targets = {target.label: target for target in forma.targets}
    for target in forma.targets:
        if target.namespace.upper() not in {n.upper() for n in catalog.namespaces}:
            raise InvalidForma(f"target {target.label!r}: no enabled plugin serves namespace {target.namespace}; "
                               f"enabled: {', '.join(sorted(catalog.namespaces)) or 'none'}",
                               {"TargetLabel": target.label, "Namespace": target.namespace})
        if target.config and values.any_within(target.config, _is_reference):
            raise InvalidForma(f"target {target.label!r}: references in a target's config are not supported",
                               {"TargetLabel": target.label})
    for resource in forma.resources:
        where = f"resource {resource.stack}/{resource.type}/{resource.label}"
        if resource.type not in catalog.types:
            namespace = catalog.namespace_of(resource.type)
            known = "is not enabled" if namespace not in catalog.namespaces else "has no such type"
            raise InvalidForma(f"{where}: unknown resource type {resource.type} (plugin {namespace} {known})",
                               {"Type": resource.type, "Label": resource.label})
        if resource.stack not in stacks and not inventory.stack_exists(resource.stack):
            raise StackReferenceNotFound(f"{where}: stack {resource.stack!r} is neither in the forma nor stored",
                                         {"StackLabel": resource.stack})
        target = targets.get(resource.target)
        namespace = target.namespace if target is not None else None
        if target is None:
            stored = inventory.targets.get(resource.target)
            if stored is None:
                raise TargetReferenceNotFound(f"{where}: target {resource.target!r} is neither in the forma nor "
                                              "stored", {"TargetLabel": resource.target})
            namespace = stored.namespace
        if namespace is not None and namespace.upper() != catalog.namespace_of(resource.type).upper():
            raise InvalidForma(f"{where}: target {resource.target!r} is a {namespace} target, not "
                               f"{catalog.namespace_of(resource.type)}", {"TargetLabel": resource.target})


def _is_reference(value: Any) -> bool:
    return values.is_res(value) or values.is_ref(value)


def check_no_hashed_secret(resource: Resource, desired: dict[str, Any]) -> None:
    """A create must send each secret itself: a hash (``svc.hashedSecret``, as ``svc extract`` writes a
    secret it cannot read) only stands for a secret the resource already has."""
    hashed = sorted(key for key, value in desired.items() if _given_hash(value))
    if hashed:
        raise InvalidForma(
            f"resource {resource.stack}/{resource.type}/{resource.label} is created, but {', '.join(hashed)} "
            "holds only a secret's hash (svc.hashedSecret): supply the plaintext, e.g. svc.value(\"…\").opaque",
            {"Fields": hashed, "Stack": resource.stack, "Label": resource.label, "Type": resource.type})


def _given_hash(value: Any) -> bool:
    """A hash the user gave; not a reference's (the planner's stand-in for a producer's secret, which
    execution reads)."""
    if values.is_ref(value):
        return False
    if isinstance(value, dict):
        return bool(value.get("$hashed")) or any(_given_hash(v) for v in value.values())
    if isinstance(value, list):
        return any(_given_hash(v) for v in value)
    return False


def check_required_on_create(resource: Resource, properties: dict[str, Any], schema: Schema) -> None:
    missing = sorted(key for key, hint in schema.hints.items()
                     if "." not in key and (hint.required_on_create or hint.required)
                     and properties.get(key) in (None, "", [], {}))
    if missing:
        raise RequiredFieldMissingOnCreate(
            f"resource {resource.stack}/{resource.type}/{resource.label}: missing required field(s) "
            f"{', '.join(missing)}",
            {"MissingFields": missing, "Stack": resource.stack, "Label": resource.label, "Type": resource.type})
