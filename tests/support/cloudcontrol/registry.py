"""The CloudFormation registry schemas the stand-in behaves by: the pinned ``cfn-lint`` copy (issue 26).

``cfnlint/data/schemas/providers/us-east-1.json`` maps each type name to the file under
``cfnlint/data/schemas/resources/`` that holds its resource provider schema. Schemas are read on first use:
reading all 1,854 takes seconds, and most runs touch a few types.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Json = dict[str, Any]

def _schemas_directory() -> Path:
    # Found without importing cfnlint, whose package import takes seconds (it loads its whole linter).
    spec = importlib.util.find_spec("cfnlint")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("cfn-lint is not installed: it is a dev dependency (scripts/install.sh --dev)")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "schemas"


_SCHEMAS = _schemas_directory()
_REGION = "us-east-1"


def top_level(paths: list[str]) -> frozenset[str]:
    """The property names of the ``/properties/<Name>`` paths among ``paths`` (nested ones left out)."""
    return frozenset(path.split("/")[2] for path in paths if path.count("/") == 2 and path.startswith("/properties/"))


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one per type per process
class TypeSchema:
    """One resource type's registry schema, with the parts the Cloud Control API acts on."""

    type_name: str
    raw: Json

    @property
    def handlers(self) -> frozenset[str]:
        return frozenset(self.raw.get("handlers", {}))

    @property
    def in_scope(self) -> bool:
        """Cloud Control can create and read it: the types issue 26 covers."""
        return {"create", "read"} <= self.handlers

    @property
    def properties(self) -> Mapping[str, Json]:
        return self.raw.get("properties", {})

    @property
    def primary_identifier(self) -> tuple[str, ...]:
        return tuple(path.split("/")[2] for path in self.raw["primaryIdentifier"])

    @property
    def read_only_paths(self) -> tuple[str, ...]:
        return tuple(self.raw.get("readOnlyProperties", ()))

    @property
    def write_only_paths(self) -> tuple[str, ...]:
        return tuple(self.raw.get("writeOnlyProperties", ()))

    @property
    def create_only_paths(self) -> tuple[str, ...]:
        return tuple(self.raw.get("createOnlyProperties", ()))

    @property
    def read_only(self) -> frozenset[str]:
        return top_level(self.raw.get("readOnlyProperties", []))

    @property
    def create_only(self) -> frozenset[str]:
        return top_level(self.raw.get("createOnlyProperties", []))

    @property
    def write_only(self) -> frozenset[str]:
        return top_level(self.raw.get("writeOnlyProperties", []))

    @property
    def required(self) -> tuple[str, ...]:
        """What a desired state must hold: the schema's ``required`` less the read-only properties (which the
        service fills in, so a schema that lists one there cannot mean the caller)."""
        return tuple(name for name in self.raw.get("required", ()) if name not in self.read_only)

    @property
    def list_required(self) -> tuple[str, ...]:
        """The properties a ListResources call must give in its ResourceModel (a child type lists per parent)."""
        schema = self.raw.get("handlers", {}).get("list", {}).get("handlerSchema", {})
        return tuple(schema.get("required", ()))

    def definition(self, reference: str) -> Json:
        """The schema a local ``$ref`` (``#/definitions/Name`` or ``#/properties/Name``) points at."""
        if not reference.startswith("#/"):
            raise KeyError(f"{self.type_name}: only local references are supported, not {reference}")
        node: Any = self.raw
        for part in reference[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def validation_schema(self) -> Json:
        """The JSON schema a resource model is checked against: the type's schema without its registry-only
        members (handlers, identifiers, tagging …), which no JSON-schema validator knows."""
        kept = ("properties", "definitions", "required", "additionalProperties", "oneOf", "anyOf", "allOf",
                "dependentRequired", "dependencies")
        schema = {key: self.raw[key] for key in kept if key in self.raw}
        schema["type"] = "object"
        schema["required"] = list(self.required)
        return schema


class Registry:
    """The pinned registry: type names and their schemas."""

    def __init__(self) -> None:
        providers = json.loads((_SCHEMAS / "providers" / f"{_REGION}.json").read_text())
        self._files: dict[str, str] = dict(providers)

    def __contains__(self, type_name: object) -> bool:
        return type_name in self._files

    def type_names(self) -> list[str]:
        """Every type name of the registry, sorted."""
        return sorted(self._files)

    def in_scope_type_names(self) -> list[str]:
        """Every type with create and read handlers (the ones Cloud Control manages), sorted."""
        return [name for name in self.type_names() if self.schema(name).in_scope]

    def schema(self, type_name: str) -> TypeSchema:
        return _load(self._files[type_name], type_name)

    def __iter__(self) -> Iterator[TypeSchema]:
        return (self.schema(name) for name in self.type_names())


@functools.cache
def _load(file_stem: str, type_name: str) -> TypeSchema:
    return TypeSchema(type_name, json.loads((_SCHEMAS / "resources" / f"{file_stem}.json").read_text()))


@functools.cache
def registry() -> Registry:
    """The registry, read once per process."""
    return Registry()
