"""Parent types, from the properties a type's list handler requires.

A child type (an Amplify branch, an API Gateway authorizer) is listed per parent: its list handler needs a
property of the parent (``AppId``, ``RestApiId``). The parent is the type that property is named after
(``App``+``Id``, ``RestApi``+``Id``; ``Workspace`` itself), found in the same service first, then in
any service when the name is unique there. A type whose list needs a property no parent is found for,
or properties of more than one parent, cannot be listed by discovery: it is not discoverable.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc_plugin_aws_gen.registry import TypeSchema

_SUFFIXES = ("Id", "Name", "Arn", "Identifier", "")


@dataclass(frozen=True)
class ListParameter:
    parent_property: str  # on the parent
    list_parameter: str  # in the list request's resource model


@dataclass(frozen=True)
class ParentRelation:
    parent: str
    parameters: tuple[ListParameter, ...]


def _referenced_name(schema: TypeSchema, parameter: str) -> str:
    """The child property a list parameter stands for: ``{"$ref": "resource-schema.json#/properties/X"}``."""
    handler_schema = (schema.handlers.get("list") or {}).get("handlerSchema") or {}
    node = (handler_schema.get("properties") or {}).get(parameter) or {}
    ref = node.get("$ref") if isinstance(node, dict) else None
    if isinstance(ref, str) and "#/properties/" in ref:
        return ref.rsplit("/", 1)[-1]
    return parameter


class ParentFinder:
    def __init__(self, schemas: list[TypeSchema]) -> None:
        self._by_resource: dict[str, list[TypeSchema]] = {}
        for schema in schemas:
            self._by_resource.setdefault(schema.resource, []).append(schema)

    def _parent_of(self, child: TypeSchema, name: str) -> tuple[TypeSchema, str] | None:
        for suffix in _SUFFIXES:
            if suffix and not name.endswith(suffix):
                continue
            resource = name[: len(name) - len(suffix)] if suffix else name
            candidates = [s for s in self._by_resource.get(resource, ()) if s.name != child.name]
            same_service = [s for s in candidates if s.service == child.service]
            chosen = same_service or candidates
            if len(chosen) != 1:
                continue
            parent = chosen[0]
            if name in parent.properties:
                return parent, name
            identifiers = parent.paths("primaryIdentifier")
            if len(identifiers) == 1 and len(identifiers[0]) == 1:
                return parent, identifiers[0][0]
        return None

    def relation(self, child: TypeSchema) -> ParentRelation | None:
        """The child's parent and list parameters; None for a type listed without any."""
        if not child.list_parameters:
            return None
        found = [(self._parent_of(child, _referenced_name(child, p)), p) for p in child.list_parameters]
        parents = {f[0].name for f, _ in found if f is not None}
        if any(f is None for f, _ in found) or len(parents) != 1:
            return ParentRelation("", ())
        return ParentRelation(parents.pop(), tuple(ListParameter(f[1], p) for f, p in found if f is not None))
