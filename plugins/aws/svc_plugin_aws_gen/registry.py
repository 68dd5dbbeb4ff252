"""The pinned CloudFormation registry: the resource provider schemas shipped in ``cfn-lint``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from importlib import metadata, resources
from typing import Any

PINNED_CFN_LINT = "1.58.0"
REGION = "us-east-1"

JsonSchema = dict[str, Any]


class RegistryError(Exception):
    """The registry source is missing or not the pinned version."""


@dataclass(frozen=True)
class TypeSchema:
    """One resource type's provider schema, with the helpers the generator asks of it."""

    name: str  # AWS::EC2::Instance
    raw: JsonSchema

    @property
    def service(self) -> str:
        return self.name.split("::")[1]

    @property
    def resource(self) -> str:
        return self.name.split("::")[2]

    @property
    def handlers(self) -> dict[str, Any]:
        return self.raw.get("handlers") or {}

    @property
    def in_scope(self) -> bool:
        """Cloud Control can manage a type whose schema has create and read handlers."""
        return "create" in self.handlers and "read" in self.handlers

    @property
    def listable(self) -> bool:
        return "list" in self.handlers

    @property
    def properties(self) -> dict[str, JsonSchema]:
        return self.raw.get("properties") or {}

    @property
    def definitions(self) -> dict[str, JsonSchema]:
        return self.raw.get("definitions") or {}

    def paths(self, key: str) -> list[list[str]]:
        """A ``…Properties`` list of JSON pointers (``/properties/A/*/B``) as steps below ``properties``."""
        return [pointer.removeprefix("/properties/").split("/") for pointer in self.raw.get(key) or ()]

    @cached_property
    def list_parameters(self) -> list[str]:
        """The properties the list handler needs (a child type is listed per parent)."""
        handler_schema = (self.handlers.get("list") or {}).get("handlerSchema") or {}
        return sorted(handler_schema.get("required") or ())

    def resolve(self, node: JsonSchema) -> tuple[str | None, JsonSchema]:
        """The definition a ``$ref`` names and its schema; ``(None, node)`` for a node without one."""
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/definitions/"):
            return None, node
        name = ref.removeprefix("#/definitions/")
        return name, self.definitions.get(name, {})


def cfn_lint_version() -> str:
    try:
        return metadata.version("cfn-lint")
    except metadata.PackageNotFoundError as exc:
        raise RegistryError("cfn-lint is not installed: run scripts/install.sh --dev") from exc


def load_registry() -> list[TypeSchema]:
    """Every type of the pinned registry, sorted by name."""
    version = cfn_lint_version()
    if version != PINNED_CFN_LINT:
        raise RegistryError(f"cfn-lint {version} is installed; the package is generated from {PINNED_CFN_LINT} "
                            "(the [dev] extra of pyproject.toml pins it): run scripts/install.sh --dev")
    schemas = resources.files("cfnlint") / "data" / "schemas"
    providers: dict[str, str] = json.loads((schemas / "providers" / f"{REGION}.json").read_text(encoding="utf-8"))
    return [TypeSchema(name, json.loads((schemas / "resources" / f"{file}.json").read_text(encoding="utf-8")))
            for name, file in sorted(providers.items())]
