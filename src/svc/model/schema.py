"""A resource type's descriptor, as ``@svc/svc.pkl`` derives it: the planner's view of a type."""

from __future__ import annotations

import enum

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_pascal


class WireModel(BaseModel):
    """PascalCase on the wire (the reference JSON), snake_case in Python; unknown keys ignored."""

    model_config = ConfigDict(alias_generator=to_pascal, populate_by_name=True, frozen=True, extra="ignore",
                              defer_build=True)

    def to_json(self) -> dict:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class EdgeKind(enum.StrEnum):
    default = "default"
    attaches_to = "attachesTo"
    runtime_dependency = "runtimeDependency"


class FieldHint(WireModel):
    create_only: bool = False
    write_only: bool = False
    required: bool = False
    required_on_create: bool = False
    required_on_update: bool = False
    has_provider_default: bool = False
    opaque: bool = False
    attaches_to: bool = False
    edge_kind: EdgeKind = EdgeKind.default
    update_method: str = ""  # "" (unordered set), "Array", "Atomic", "EntitySet" or "Set"
    index_field: str = ""
    format: str = ""  # "" or "json"

    @property
    def kind(self) -> EdgeKind:
        """The edge kind, with the deprecated ``AttachesTo: true`` (kept on the wire as given) read as attachesTo."""
        return EdgeKind.attaches_to if self.attaches_to and self.edge_kind is EdgeKind.default else self.edge_kind


class ParentMapping(WireModel):
    """Camel case on the wire, as the schema's ``ParentRef`` is."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore",
                              alias_generator=lambda name: to_pascal(name)[0].lower() + to_pascal(name)[1:])

    parent_property: str
    child_property: str


class Schema(WireModel):
    identifier: str
    fields: tuple[str, ...] = ()
    hints: dict[str, FieldHint] = Field(default_factory=dict)
    discoverable: bool = True
    extractable: bool = True
    portable: bool = False
    parent: str = ""
    parent_mappings: tuple[ParentMapping, ...] = ()
    opaque_paths: tuple[str, ...] = ()  # where the secrets are, at any depth (``svc.model.opaque``)

    def query(self, flag: str) -> list[str]:
        """The keys whose hint has the boolean ``flag`` set, e.g. ``query("create_only")``."""
        return [key for key, hint in self.hints.items() if getattr(hint, flag) is True]


class ResourceDescriptor(WireModel):
    type: str
    doc_comment: str | None = None
    schema_: Schema = Field(alias="Schema")
