"""The evaluated forma: what the CLI sends to the agent and what the planner consumes.

Field names follow the forma JSON (``api-cli-config.md`` §4.5) in PascalCase on the wire.
Resource ``properties`` stay JSON: references (``$res``), values (``$value``) and templates
(``$embed``) are envelopes the agent resolves; :mod:`svc.model.values` reads them.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_serializer, field_validator, model_validator

from svc.model import wire
from svc.model.forma_document import LISTED_SCHEMAS, Property
from svc.model.schema import FieldHint, Schema, WireModel

__all__ = ["LISTED_SCHEMAS", "Forma", "Property", "Resource", "Stack", "Target"]


class Description(WireModel):
    text: str | None = None
    confirm: bool = False


class Policy(WireModel):
    """A stack policy (``ttl`` or ``auto-reconcile``), or a reference to one (``$ref``)."""

    type: Literal["ttl", "auto-reconcile"] | None = None
    label: str | None = None
    ttl_seconds: int | None = Field(default=None, alias="TTLSeconds")
    expires_at: str | None = None
    on_dependents: Literal["abort", "cascade"] | None = None
    interval_seconds: int | None = None
    ref: str | None = Field(default=None, alias="$ref")


class Stack(WireModel):
    label: str
    description: str | None = None
    policies: tuple[Policy, ...] = ()


class ConfigFieldHint(WireModel):
    create_only: bool = True


class ConfigSchema(WireModel):
    hints: dict[str, ConfigFieldHint] | None = None


class Reaping(WireModel):
    kind: Literal["never", "after"]
    max_unreachable_seconds: int | None = None


class Target(WireModel):
    label: str
    namespace: str
    config: dict[str, Any] | None = None
    config_schema: ConfigSchema | None = None
    discoverable: bool = True
    reaping: Reaping | None = None


class Resource(WireModel):
    label: str
    type: str
    stack: str
    target: str
    schema_: Schema = Field(alias="Schema")
    properties: dict[str, Any] = Field(default_factory=dict)
    group: str | None = None
    alias: str | None = None
    managed: bool = True

    def hint(self, key: str) -> FieldHint | None:
        return self.schema_.hints.get(key)


# The key of the forma JSON's list of descriptors in the shape ``Forma.to_wire`` renders (and ``@svc/forma.pkl``):
# each descriptor once, each resource naming its own by its place there (``SchemaIndex``).


class Forma(WireModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)  # ``Property`` is a wire struct (validated above)

    description: Description = Field(default_factory=Description)
    properties: dict[str, Property] = Field(default_factory=dict)
    stacks: tuple[Stack, ...] = ()
    targets: tuple[Target, ...] = ()
    policies: tuple[Policy, ...] = ()
    resources: tuple[Resource, ...] = ()

    @field_validator("properties", mode="before")
    @classmethod
    def _properties(cls, value: Any) -> Any:
        # A command reads them without pydantic (``svc.model.forma_document``); decoded the same way here.
        try:
            return wire.decode(dict[str, Property], value)
        except wire.WireError as exc:
            raise ValueError(str(exc)) from None

    @field_serializer("properties")
    def _property_documents(self, properties: dict[str, Property]) -> dict[str, Any]:
        return {name: prop.to_json() for name, prop in properties.items()}

    @model_validator(mode="before")
    @classmethod
    def _share_schemas(cls, data: Any) -> Any:
        """Every resource of a type carries the same descriptor: each distinct one is validated once and the
        (frozen) model shared. 100,000 resources held 100,000 copies of a few descriptors, 7 KB each: most of an
        agent's memory while it plans them. A forma sent as ``to_wire`` renders it lists each descriptor once
        (``Schemas``) and has each resource name its own (``SchemaIndex``)."""
        if not isinstance(data, dict):
            return data
        key = "Resources" if "Resources" in data else "resources"
        resources = data.get(key)
        if not isinstance(resources, (list, tuple)):
            return data
        listed = data.get(LISTED_SCHEMAS)
        if isinstance(listed, list):
            return {**data, key: _indexed_schemas(resources, listed)}
        schemas: dict[str, Schema] = {}
        shared: list[Any] = []
        for resource in resources:
            raw = resource.get("Schema") if isinstance(resource, dict) else None
            if isinstance(raw, dict):
                text = json.dumps(raw, separators=(",", ":"))
                schema = schemas.get(text)
                if schema is None:
                    try:
                        schema = schemas[text] = Schema.model_validate(raw)
                    except ValidationError:
                        schema = None  # validated with the resource, so that the error says where it is
                if schema is not None:
                    resource = {**resource, "Schema": schema}
            shared.append(resource)
        return {**data, key: shared}

    def to_json(self) -> dict[str, Any]:
        """The forma JSON as the original product renders it: what is unset or empty is left out (a
        description that says nothing, no CLI properties, a stack's empty policies). The resources of one
        descriptor share its dict (dumped once: 10,000 resources of one type spent 0.15 s dumping it for each)."""
        document = self._rendered(self._dumped_without_schemas())
        schemas, places = self._schema_places()
        document["Resources"] = [_with_schema(rendered, schemas[place])
                                 for rendered, place in zip(document["Resources"], places, strict=True)]
        return document

    def to_wire(self) -> dict[str, Any]:
        """The forma JSON as the CLI sends it: as ``to_json``, but each distinct descriptor once (``Schemas``) and
        each resource naming its own by its place there (``SchemaIndex``). A forma of 1,000 resources of one
        type carried its descriptor 1,000 times, which the agent read and compared 1,000 times."""
        document = self._rendered(self._dumped_without_schemas())
        schemas, places = self._schema_places()
        for rendered, place in zip(document["Resources"], places, strict=True):
            rendered["SchemaIndex"] = place
        document[LISTED_SCHEMAS] = schemas
        return document

    def _dumped_without_schemas(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True,
                               exclude={"resources": {"__all__": {"schema_"}}})

    def _schema_places(self) -> tuple[list[dict[str, Any]], list[int]]:
        """Each distinct descriptor dumped once (the resources of a type share one model: ``_share_schemas``),
        and each resource's place among them."""
        places: dict[int, int] = {}
        schemas: list[dict[str, Any]] = []
        for resource in self.resources:
            if id(resource.schema_) not in places:
                places[id(resource.schema_)] = len(schemas)
                schemas.append(resource.schema_.to_json())
        return schemas, [places[id(resource.schema_)] for resource in self.resources]

    def _rendered(self, document: dict[str, Any]) -> dict[str, Any]:
        if not self.properties:
            document.pop("Properties", None)
        if self.description.text is None and not self.description.confirm:
            document.pop("Description", None)
        for stack in document.get("Stacks", ()):
            if not stack.get("Policies"):
                stack.pop("Policies", None)
        return document


def _with_schema(rendered: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A resource's dump with its descriptor where the model's field order has it: after ``Target``."""
    ordered: dict[str, Any] = {}
    for key, value in rendered.items():
        ordered[key] = value
        if key == "Target":
            ordered["Schema"] = schema
    return ordered


def _indexed_schemas(resources: list[Any] | tuple[Any, ...], listed: list[Any]) -> list[Any]:
    """The resources with their descriptors in place of ``SchemaIndex``; one out of range (or a descriptor that is
    not one) is left for the resource's validation to report."""
    schemas: list[Schema | None] = []
    for raw in listed:
        try:
            schemas.append(Schema.model_validate(raw))
        except ValidationError:
            schemas.append(None)
    shared = []
    for resource in resources:
        index = resource.get("SchemaIndex") if isinstance(resource, dict) else None
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(schemas):
            resource = {key: value for key, value in resource.items() if key != "SchemaIndex"}
            resource["Schema"] = schemas[index] if schemas[index] is not None else listed[index]
        shared.append(resource)
    return shared
